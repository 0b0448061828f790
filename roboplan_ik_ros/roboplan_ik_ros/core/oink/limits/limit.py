"""Base class of hard limits: exact bounds ``lower <= G dq <= upper`` on the joint displacement."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ...keys import check_declared


class Bounds(NamedTuple):
    """``lower <= G dq <= upper``; ``G is None`` means the identity (a box on dq, shape (nv,))."""

    G: np.ndarray | None
    lower: np.ndarray
    upper: np.ndarray


@dataclass
class LimitConfig:
    """The YAML keys every limit kind has (``limits:`` entries); a kind's config dataclass adds its own."""

    type: str
    given_keys: frozenset = field(default=frozenset(), repr=False, compare=False)  # keys set in the YAML

    def validate(self, path: str) -> None:
        """Check the keys' ranges and the kind's own rules (an InvalidInputError naming the key under ``path``)."""
        check_declared(self, path)


class Limit(ABC):
    """A hard constraint: the QP's solution always satisfies it (the QP fails if limits conflict)."""

    name: str

    @abstractmethod
    def bounds(self, q: np.ndarray) -> Bounds:
        """Bounds at configuration q (full nq) on the group's displacement dq."""

    def last_bounds(self) -> Bounds | None:
        """The bounds the last :meth:`bounds` call returned (what the last step was solved with), for
        reports of which bound a step met; None when the limit does not keep them."""
        return None
