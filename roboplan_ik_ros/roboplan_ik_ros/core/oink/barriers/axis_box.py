"""AxisBox: the rows of an axis-aligned box on a point of the world frame (a frame's origin, the centre of mass)."""

from __future__ import annotations

import numpy as np

from ...errors import InvalidInputError, as_vector

AXES = "xyz"


class AxisBox:
    """Per selected axis i, ``h = p_i - p_min_i`` (lower) and ``h = p_max_i - p_i`` (upper) [m]: ``h = select @ p
    + offset`` and ``dh/dq = select @ dp/dq``, the lower rows first. ``p_min``, ``p_max``: corners [m], finite on
    the selected axes; ``axis_selection``: which of x, y, z (at least one). Errors name ``name``'s keys."""

    def __init__(self, p_min, p_max, axis_selection, name: str) -> None:
        try:
            axes = np.array([bool(a) for a in axis_selection])
        except TypeError as exc:
            raise InvalidInputError(f"{name}.axis_selection: expected 3 booleans, got {axis_selection!r}") from exc
        if axes.shape != (3,) or not axes.any():
            raise InvalidInputError(f"{name}.axis_selection: expected 3 booleans with at least one true")
        self.axes = np.flatnonzero(axes)
        self.p_min = as_vector(p_min, 3, f"{name}.p_min", allow_inf=True)
        self.p_max = as_vector(p_max, 3, f"{name}.p_max", allow_inf=True)
        sel_min, sel_max = self.p_min[self.axes], self.p_max[self.axes]
        if not (np.isfinite(sel_min).all() and np.isfinite(sel_max).all() and (sel_min < sel_max).all()):
            raise InvalidInputError(
                f"{name}: expected finite p_min < p_max on the selected axes, got p_min={self.p_min.tolist()}, "
                f"p_max={self.p_max.tolist()}"
            )
        k = len(self.axes)
        self.size = 2 * k
        self.select = np.zeros((2 * k, 3))
        self.select[np.arange(2 * k), np.concatenate([self.axes, self.axes])] = np.repeat([1.0, -1.0], k)
        self.offset = np.concatenate([-sel_min, sel_max])

    def row_names(self, prefix: str = "") -> list[str]:
        return ([f"{prefix}{AXES[a]} lower" for a in self.axes] + [f"{prefix}{AXES[a]} upper" for a in self.axes])

    def face(self, row: int) -> tuple[int, float, str]:
        """(axis, the bound [m], "p_min" or "p_max") of ``row``."""
        k = len(self.axes)
        axis = int(self.axes[row % k])
        return (axis, float(self.p_min[axis]), "p_min") if row < k else (axis, float(self.p_max[axis]), "p_max")
