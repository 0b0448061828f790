"""The control tick's compiled kernels keep the GIL (ctypes.PyDLL); what runs long releases it (ctypes.CDLL).

core/compiled_library.py: a kernel called through ctypes.CDLL releases the GIL for its microseconds and a
thread waiting for it may take it: the tick then waits to get it back. Building geometries and SimpleIK's
descent run for milliseconds in other threads: they must let the tick run."""

from __future__ import annotations

import ctypes

import pytest

from roboplan_ik_ros.core.control import compiled_control
from roboplan_ik_ros.core.model import compiled_pairs
from roboplan_ik_ros.core.oink import compiled_assembly
from roboplan_ik_ros.core.simple_ik import compiled_step


def _keeps_gil(fn) -> bool:
    return bool(fn._flags_ & ctypes._FUNCFLAG_PYTHONAPI)  # set on every function of a PyDLL handle


def test_the_ticks_kernel_calls_keep_the_gil_and_long_calls_release_it():
    kernel, why = compiled_assembly.load_kernel()
    if kernel is None:
        pytest.skip(f"the OInK kernel is not built here: {why}")
    assert _keeps_gil(kernel)  # oink_assemble
    assert all(map(_keeps_gil, compiled_assembly.load_acceleration_box()))  # the box, the whole bounds
    if compiled_control.APPLY is not None:
        assert _keeps_gil(compiled_control.APPLY)  # the command guard
    if compiled_pairs._LIBRARY is None:
        pytest.skip(f"the pair distance kernel is not built here: {compiled_pairs.LOAD_ERROR}")
    step, build = compiled_pairs._STEP_LIBRARY, compiled_pairs._LIBRARY
    for name in ("pdk_set_joint", "pdk_barrier_update", "pdk_barrier_evaluate", "pdk_closest", "pdk_distances"):  # the tick
        assert _keeps_gil(getattr(step, name)), name
    for name in ("pdk_new", "pdk_add_geometry", "pdk_add_pair", "pdk_truncate"):  # building: off the loop, long
        assert not _keeps_gil(getattr(build, name)), name
    functions, _ = compiled_step.load_step_kernel()
    if functions is not None:  # SimpleIK's descent, in the service thread
        assert not any(_keeps_gil(fn) for fn in functions)
