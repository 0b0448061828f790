"""Exceptions of the IK core.

Every input check raises :class:`InvalidInputError` (a ``ValueError``) whose message names the bad
thing and, where there is a finite set, lists what is valid.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


class InvalidInputError(ValueError):
    """Bad user input: unknown name, wrong shape, non-finite value, out-of-range option."""


def unknown_name(kind: str, name: str, valid: Iterable[str]) -> InvalidInputError:
    """Error for a name that is not one of ``valid``."""
    valid = list(valid)
    shown = ", ".join(repr(v) for v in valid[:40])
    more = f" (and {len(valid) - 40} more)" if len(valid) > 40 else ""
    return InvalidInputError(f"unknown {kind} {name!r}; valid: {shown}{more}")


def as_vector(value, size: int, what: str, *, allow_inf: bool = False) -> np.ndarray:
    """Return ``value`` as a float vector of ``size`` (a scalar is broadcast), or raise."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what}: expected a number or {size} numbers, got {value!r}") from exc
    if arr.ndim == 0:
        arr = np.full(size, float(arr))
    if arr.shape != (size,):
        raise InvalidInputError(f"{what}: expected {size} values, got shape {arr.shape}")
    bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
    if bad.any():
        raise InvalidInputError(f"{what}: non-finite value at index {int(np.flatnonzero(bad)[0])}: {arr.tolist()}")
    return arr


def check_positive(value: float, what: str, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    """Return ``value`` as a float if it is > 0 (or >= 0), else raise."""
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what}: expected a number, got {value!r}") from exc
    if np.isnan(v) or (np.isinf(v) and not allow_inf) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise InvalidInputError(f"{what}: expected a finite number {bound}, got {value!r}")
    return v
