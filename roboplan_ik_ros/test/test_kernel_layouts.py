"""Every ctypes mirror of a kernel struct matches the build, size and every field offset (compiled_library.check_layout,
run when a kernel is loaded), and a mirror that differs from the build is refused naming the field."""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path

import pytest

from roboplan_ik_ros.core import compiled_library
from roboplan_ik_ros.core.control import compiled_control as control_kernel
from roboplan_ik_ros.core.model import compiled_pairs as pair_kernel
from roboplan_ik_ros.core.oink import compiled_assembly as oink_kernel
from roboplan_ik_ros.core.simple_ik import compiled_step as sik_kernel

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("kernel_layout", ROOT / "scripts" / "kernel_layout.py")
kernel_layout = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernel_layout)


def _library(module):
    path = module._PATH if module in (pair_kernel, control_kernel) else module._library_path()
    if path is None:
        pytest.skip(f"{module.__name__}'s kernel is not built")
    return ctypes.CDLL(str(path))


OINK_STRUCTS = oink_kernel.LAYOUT_STRUCTS
SIK_STRUCTS = (sik_kernel._Step, sik_kernel._Bounds, sik_kernel._Descent)


@pytest.mark.parametrize("module, symbol, structs", [(oink_kernel, "oink_layout", OINK_STRUCTS),
                                                     (sik_kernel, "sik_layout", SIK_STRUCTS),
                                                     (pair_kernel, "pdk_layout", (pair_kernel.BarrierStep,)),
                                                     (control_kernel, "ctl_layout", (control_kernel.GuardArrays,
                                                                                      control_kernel.StreamStartArrays,
                                                                                      control_kernel.StateAcceptArrays))])
def test_every_kernel_struct_mirror_matches_the_build(module, symbol, structs):
    compiled_library.check_layout(_library(module), symbol, structs)  # raises on any difference
    if module is pair_kernel:
        kernel, error = module._STEP_LIBRARY, module.LOAD_ERROR
    elif module is control_kernel:
        kernel, error = module.APPLY, module.LOAD_ERROR
    else:
        kernel, error = module.load_kernel() if module is oink_kernel else module.load_step_kernel()
    assert kernel is not None, error


def _swapped(struct, i: int, j: int):
    """A copy of ctypes struct ``struct`` with its fields i and j swapped (as a mirror edited on one side)."""
    fields = list(struct._fields_)
    fields[i], fields[j] = fields[j], fields[i]
    return type(struct.__name__, (ctypes.Structure,), {"_fields_": fields})


def test_a_kernel_mirror_with_two_fields_swapped_is_refused_naming_them():
    """m and n (both int64) trade places in the mirror: the same size and offsets by position, wrong by name."""
    lib = _library(sik_kernel)
    names = [f[0] for f in sik_kernel._Step._fields_]
    swapped = _swapped(sik_kernel._Step, names.index("m"), names.index("n"))
    with pytest.raises(AttributeError, match=r"sik_layout: _Step's fields .* are not sik_step's in the build"):
        compiled_library.check_layout(lib, "sik_layout", (swapped, sik_kernel._Bounds, sik_kernel._Descent))


def test_a_kernel_mirror_with_a_field_retyped_is_refused_naming_the_field():
    """``m`` as an int32 in the mirror: every offset the same (the next field is 8-aligned), its size not."""
    lib = _library(sik_kernel)
    fields = [(name, ctypes.c_int32 if name == "m" else kind) for name, kind in sik_kernel._Step._fields_]
    retyped = type("_Step", (ctypes.Structure,), {"_fields_": fields})
    with pytest.raises(AttributeError, match=r"sik_layout: _Step\.m's size is 8 bytes in the build, 4 in its ctypes mirror"):
        compiled_library.check_layout(lib, "sik_layout", (retyped, sik_kernel._Bounds, sik_kernel._Descent))


def test_a_kernel_mirror_missing_a_field_is_refused():
    lib = _library(sik_kernel)
    shorter = type("_Step", (ctypes.Structure,), {"_fields_": list(sik_kernel._Step._fields_[:-1])})
    with pytest.raises(AttributeError, match="sik_layout: _Step's fields"):
        compiled_library.check_layout(lib, "sik_layout", (shorter, sik_kernel._Bounds, sik_kernel._Descent))


@pytest.mark.parametrize("prefix", sorted(kernel_layout.KERNELS))
def test_the_layout_functions_are_what_the_typedefs_give(prefix):
    """scripts/kernel_layout.py regenerates them from the C file's typedefs: a struct changed without it fails here."""
    path = ROOT / kernel_layout.KERNELS[prefix]
    src = path.read_text()
    assert kernel_layout.generated(src, prefix) == src, f"run: python scripts/kernel_layout.py {path} {prefix}"
