"""SharedCloudSlot: one :class:`~.cloud_filter.FilteredCloud` in POSIX shared memory, written by the cloud
ingest process and read by the node's, versioned so that a half-written result is never read. ROS-free.

Layout (native byte order): a header of 8 int64 - ``begin``, ``end`` (the version of the result being
written and of the result complete), ``n_points``, ``n_cells``, ``received``, ``invalid``, ``cropped``,
``self_points`` - then ``capacity`` rows of points and ``capacity`` rows of cells (float64 x, y, z).
:meth:`write` sets ``begin`` to the new version first and ``end`` last; :meth:`read` takes a result only
if ``begin == end ==`` the version it waits for, before and after copying it out (a seqlock): the
writer's answer on the pipe comes after the write, so this never fails unless the protocol is broken,
and then it says so instead of returning mixed rows.

The parent (the node) creates the segment (:meth:`create`; its name under /dev/shm is
``psm_...``), owns it and unlinks it (:meth:`unlink`, at stop or when it grows a bigger one);
multiprocessing's resource tracker unlinks it should the parent die without doing so. The child only
attaches (:meth:`attach`) and writes.
"""

from __future__ import annotations

from multiprocessing import shared_memory

import numpy as np

from .cloud_filter import FilteredCloud

_HEADER = 8  # int64 fields
_HEADER_BYTES = _HEADER * 8
_ROW_BYTES = 3 * 8  # one float64 point or cell
MIN_CAPACITY = 4096  # rows: the least segment created (~200 kB)


class SlotError(RuntimeError):
    """The slot does not hold the result asked for (a broken protocol), or a result does not fit."""


class SharedCloudSlot:
    """See the module docstring. ``capacity``: rows of points (and of cells) the segment holds."""

    def __init__(self, memory: shared_memory.SharedMemory, owner: bool) -> None:
        self._memory = memory
        self.owner = owner
        self.name = memory.name
        self.capacity = (memory.size - _HEADER_BYTES) // (2 * _ROW_BYTES)

    @classmethod
    def create(cls, rows: int) -> SharedCloudSlot:
        """A new segment for at least ``rows`` points and cells (owned: the caller unlinks it)."""
        capacity = max(int(rows), MIN_CAPACITY)
        memory = shared_memory.SharedMemory(create=True, size=_HEADER_BYTES + 2 * _ROW_BYTES * capacity)
        slot = cls(memory, owner=True)
        slot._header()[:] = -1  # no version yet
        return slot

    @classmethod
    def attach(cls, name: str) -> SharedCloudSlot:
        """The segment ``name`` created by the other process."""
        return cls(shared_memory.SharedMemory(name=name), owner=False)

    def _header(self) -> np.ndarray:
        return np.ndarray((_HEADER,), dtype=np.int64, buffer=self._memory.buf)

    def _rows(self, which: int, n: int) -> np.ndarray:
        offset = _HEADER_BYTES + which * self.capacity * _ROW_BYTES
        return np.ndarray((n, 3), dtype=np.float64, buffer=self._memory.buf, offset=offset)

    def write(self, version: int, cloud: FilteredCloud) -> None:
        """Put ``cloud`` in the slot as result ``version`` (> 0)."""
        n_points, n_cells = len(cloud.points), len(cloud.cells)
        if max(n_points, n_cells) > self.capacity:
            raise SlotError(f"{n_points} points, {n_cells} cells: more than the shared slot's {self.capacity} rows")
        header = self._header()
        header[0] = version
        self._rows(0, n_points)[:] = cloud.points
        self._rows(1, n_cells)[:] = cloud.cells
        header[2:] = (n_points, n_cells, cloud.received, cloud.invalid, cloud.cropped, cloud.self_points)
        header[1] = version

    def read(self, version: int) -> FilteredCloud:
        """A copy of result ``version``; raises SlotError if the slot does not hold it, whole."""
        header = self._header()
        first = header.copy()
        if first[0] != version or first[1] != version:
            raise SlotError(f"the shared slot holds result {first[1]} (writing {first[0]}), not {version}")
        n_points, n_cells = int(first[2]), int(first[3])
        points = self._rows(0, n_points).copy()
        cells = self._rows(1, n_cells).copy()
        if header[0] != version:
            raise SlotError(f"result {version} was overwritten (by {header[0]}) while it was read")
        received, invalid, cropped, self_points = (int(v) for v in first[4:])
        return FilteredCloud(points, cells, received=received, invalid=invalid, cropped=cropped,
                             self_points=self_points)

    def close(self) -> None:
        """Unmap this process's view (the views above are temporary: none is left to block it)."""
        self._memory.close()

    def unlink(self) -> None:
        """Remove the segment's name (the owner's job); its memory goes with the last mapping."""
        try:
            self._memory.unlink()
        except FileNotFoundError:
            pass
