"""Exceptions of the IK core.

Every input check raises :class:`InvalidInputError` (a ``ValueError``) whose message names the bad
thing and, where there is a finite set, lists what is valid.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class Range:
    """The numbers a key accepts: ``[lo, hi]``, open at ``lo`` with ``lo_open`` and at ``hi`` with
    ``hi_open``; finite unless ``inf_ok`` (then ``hi`` = inf is accepted too); whole numbers given as integers
    (not 2.0) with ``integer`` (a count: ``max_iter``). The one range check of the package: the YAML loaders,
    the core constructors and the runtime parameters all check with it, so a key's range and its error text
    are the same wherever it is set. ``unit`` is shown after the range."""

    lo: float = 0.0
    hi: float = math.inf
    lo_open: bool = False
    hi_open: bool = False
    unit: str = ""
    inf_ok: bool = False
    integer: bool = False

    def describe(self) -> str:
        """In words for error messages and parameter descriptions: ``a finite number in (0, 10] [s]``,
        ``an integer >= 1``."""
        what = "an integer" if self.integer else "a finite number"
        if math.isinf(self.hi):
            text = f"{what} {'>' if self.lo_open else '>='} {self.lo:g}"
        else:
            text = (f"{what} in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}"
                    f"{')' if self.hi_open else ']'}")
        text = f"{text} [{self.unit}]" if self.unit else text
        return f"{text} or .inf" if self.inf_ok else text

    def accepts(self, values: np.ndarray) -> np.ndarray:
        """Elementwise: which of the float array ``values`` are in the range (``integer``: and whole)."""
        ok = (values > self.lo) if self.lo_open else (values >= self.lo)
        ok &= (values < self.hi) if self.hi_open else (values <= self.hi)
        if not self.inf_ok:
            ok &= np.isfinite(values)
        if self.integer:
            ok &= np.floor(values) == values
        return ok & ~np.isnan(values)

    def reason(self, value: Any, size: int | None = None) -> str:
        """Why ``value`` is refused ("" if it is accepted). ``size``: None takes one number; n takes
        one number or n of them; -1 one number or a list of any length (its length checked elsewhere)."""
        values = _as_numbers(value, scalar_only=size is None)
        if values is not None and self.integer and not _integers(value):
            values = None  # a float, even a whole one (2.0): not a count
        if values is None:
            many = "" if size is None else " or a list of them" if size < 0 else f" or {size} of them"
            return f"expected {self.describe()}{many}, got {_show(value)}"
        if size is not None and size >= 0 and values.ndim == 1 and len(values) != size:
            return f"expected one number or {size} values, got {len(values)} values"
        if not self.accepts(np.atleast_1d(values)).all():
            many = "" if values.ndim == 0 else " each"
            return f"expected {self.describe()}{many}, got {_show(value)}"
        return ""

    def check(self, value: Any, what: str, size: int | None = None) -> Any:
        """``value`` as a float (``integer``: an int; an array when ``size`` is given and it is a list) if it is
        accepted, else raise InvalidInputError naming ``what``."""
        reason = self.reason(value, size)
        if reason:
            raise InvalidInputError(f"{what}: {reason}")
        values = _as_numbers(value, scalar_only=size is None)
        if self.integer:
            return int(values) if values.ndim == 0 else values.astype(int)
        return float(values) if values.ndim == 0 else values


def _as_numbers(value: Any, *, scalar_only: bool) -> np.ndarray | None:
    """``value`` as a float array (0-d for one number, 1-d for a list), None if it is not numbers
    (booleans and strings are not)."""
    items = [value] if np.ndim(value) == 0 else (value if not scalar_only else None)
    if items is None or isinstance(value, (str, bytes)) or len(items) == 0:
        return None
    if any(isinstance(v, (bool, np.bool_, str, bytes)) or np.ndim(v) != 0 for v in items):
        return None
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None


def _integers(value: Any) -> bool:
    """Is ``value`` an integer or a list of integers (Python or numpy; not booleans, not whole floats)?"""
    items = [value] if np.ndim(value) == 0 else value
    return all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in items)


def _show(value: Any) -> str:
    """``value`` for an error message: numpy scalars and arrays, tuples and array.array as plain lists."""
    if isinstance(value, np.generic):
        return repr(value.item())
    if isinstance(value, (str, bytes)) or np.ndim(value) == 0:
        return repr(value)
    try:
        return repr([v.item() if isinstance(v, np.generic) else v for v in value])
    except TypeError:
        return repr(value)


def check_positive(value: float, what: str, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    """Return ``value`` as a float if it is > 0 (or >= 0; .inf with ``allow_inf``), else raise."""
    if type(value) is float and (value > 0.0 or (allow_zero and value == 0.0)) and (allow_inf or value != math.inf):
        return value  # the common case without Range's machinery (~8 us a call; SimpleIKOptions.validate makes 12)
    return Range(lo_open=not allow_zero, inf_ok=allow_inf).check(value, what)
