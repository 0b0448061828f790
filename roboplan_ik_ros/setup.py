import os
import sys
from glob import glob
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from daqp_sources import COMPILE_FLAGS as DAQP_FLAGS, find_daqp_sources  # noqa: E402

package_name = "roboplan_ik_ros"
REPOSITORY = Path(__file__).resolve().parent.parent  # requirements.txt, build/ (scripts/fetch_daqp_sources.sh)


def coal_prefix() -> Path | None:
    """Where coal's headers and library are: $COAL_PREFIX, else the cmeel prefix of the environment that
    installs this package (pip's coal / pin wheels), else /usr/local and /usr; None if absent."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [os.environ.get("COAL_PREFIX", "")]
    for base in dict.fromkeys((sys.prefix, sys.exec_prefix, os.environ.get("VIRTUAL_ENV", ""))):
        if base:
            candidates.append(os.path.join(base, "lib", version, "site-packages", "cmeel.prefix"))
    candidates += ["/usr/local", "/usr"]
    for c in candidates:
        if c and (Path(c) / "include" / "coal" / "distance.h").is_file() and glob(os.path.join(c, "lib*", "libcoal.so*")):
            return Path(c)
    return None


def coal_definitions(lib: Path) -> list[tuple[str, str | None]]:
    """coal's INTERFACE_COMPILE_DEFINITIONS (octomap support and version) from its CMake targets file."""
    macros = []
    for targets in glob(str(lib / "cmake" / "coal" / "coalTargets.cmake")):
        for line in Path(targets).read_text().splitlines():
            if "INTERFACE_COMPILE_DEFINITIONS" in line and '"' in line:
                for item in line.split('"')[1].split(";"):
                    name, _, value = item.partition("=")
                    macros.append((name, value or None))
                break
    return macros


PAIR_KERNEL = "roboplan_ik_ros/core/model/kernel"  # pair_distance_kernel.cpp and its headers


def pair_distance_kernel() -> list[Extension]:
    """The collision barrier's compiled kernel (core/model/compiled_pairs.py), linked against coal; without
    coal's headers (e.g. pinocchio 3 with hpp-fcl) it is not built and the Python path runs."""
    prefix = coal_prefix()
    if prefix is None:
        print("[setup] coal's headers not found: the collision distance kernel is not built (Python path)")
        return []
    lib = next(Path(p).parent for p in sorted(glob(str(prefix / "lib*" / "libcoal.so*"))))
    return [Extension(
        package_name + ".core.model._pair_distance_kernel",
        sources=[PAIR_KERNEL + "/pair_distance_kernel.cpp"],
        # the .cpp's own headers (one translation unit): a change to one rebuilds the library
        depends=[PAIR_KERNEL + "/" + h for h in ("kernel_types.hpp", "geometry.hpp", "cloud_distance.hpp", "barrier_step.h")],
        language="c++",
        include_dirs=[str(prefix / "include"), str(prefix / "include" / "eigen3")],
        library_dirs=[str(lib)],
        libraries=["coal"],
        runtime_library_dirs=[str(lib)],
        define_macros=coal_definitions(lib),
        extra_compile_args=["-O3", "-std=c++17", "-fno-math-errno"],
        optional=True,  # a failed build leaves the Python path
    )]


KERNEL_MATH = "roboplan_ik_ros/core/kernel"  # kernel_math.h: the C math both C kernels include
OINK_KERNEL = "roboplan_ik_ros/core/oink/kernel"  # oink_kernel.c, daqp_workspace.c/.h


class BuildExt(build_ext):
    """build_ext, plus DAQP for an extension that has ``daqp`` (DaqpSources): its C files compiled with DAQP's own
    flags (not the kernel's) into objects linked into the extension, which is compiled with OINK_WITH_DAQP. The
    objects are compiled at every build and are dependencies of the extension: a kernel built without them is
    rebuilt once they are found. If they do not compile, the extension is built without them (the QP then runs in
    the daqp Python module)."""

    def build_extension(self, ext):
        daqp = getattr(ext, "daqp", None)
        if daqp is not None:
            try:
                ext.extra_objects = self.compiler.compile(
                    daqp.sources, output_dir=self.build_temp, include_dirs=[daqp.include],
                    extra_postargs=list(DAQP_FLAGS), depends=daqp.headers, debug=self.debug)
                ext.depends = ext.depends + ext.extra_objects
                ext.include_dirs.append(daqp.include)
                ext.define_macros.append(("OINK_WITH_DAQP", None))
                print(f"[setup] DAQP's C sources ({os.path.dirname(daqp.include)}) are built into {ext.name}")
            except CompileError as exc:
                print(f"[setup] DAQP's C sources did not compile ({exc}): {ext.name} is built without its QP "
                      "(the daqp Python module solves it)")
        super().build_extension(ext)


def oink_kernel() -> Extension:
    """OInK's step kernel; with DAQP's C sources when found (daqp_sources.py), else without its QP."""
    daqp, why = find_daqp_sources(REPOSITORY)
    if daqp is None:
        print(f"[setup] {why}: the OInK kernel is built without its QP (the daqp Python module solves it)")
    ext = Extension(
        package_name + ".core.oink._oink_kernel",
        sources=[OINK_KERNEL + "/oink_kernel.c", OINK_KERNEL + "/daqp_workspace.c"],
        include_dirs=[KERNEL_MATH],
        depends=[KERNEL_MATH + "/kernel_math.h", OINK_KERNEL + "/daqp_workspace.h",
                 *(daqp.sources + daqp.headers if daqp else [])],
        extra_compile_args=["-O3", "-fno-math-errno"],
        optional=True,  # a failed build (no C compiler) leaves the numpy path
    )
    ext.daqp = daqp
    return ext


NO_COMPILE = os.environ.get("ROBOPLAN_NO_COMPILE", "") not in ("", "0")  # build no kernel: the numpy / Python paths
if NO_COMPILE:
    print("[setup] ROBOPLAN_NO_COMPILE is set: no compiled kernel is built (the numpy / Python paths run)")

setup(
    name=package_name,
    version="0.1.0",
    # package_dir={"": "."} makes pip's editable install a plain .pth entry for this folder, which
    # also works with `python -m` from the repo root (no import-hook finder).
    package_dir={"": "."},
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.launch.py")),
        ("share/" + package_name + "/config", glob("config/*.yaml") + glob("config/*.srdf")),
    ],
    # OInK's compiled step: a plain C shared library (no Python API) that the core loads with ctypes
    # (core/oink/compiled_assembly.py, compiled_qp.py); without a C compiler the core runs its numpy path.
    ext_modules=[
        oink_kernel(),
        # SimpleIK's step (core/simple_ik/compiled_step.py; without it SimpleIK runs its Python step)
        Extension(
            package_name + ".core.simple_ik._simple_ik_kernel",
            sources=["roboplan_ik_ros/core/simple_ik/kernel/simple_ik_kernel.c"],
            include_dirs=[KERNEL_MATH], depends=[KERNEL_MATH + "/kernel_math.h"],
            extra_compile_args=["-O3", "-fno-math-errno"],
            optional=True,  # a failed build leaves the Python step
        ),
        # the control loop's command guard (core/control/compiled_control.py; without it the guard runs in numpy)
        Extension(
            package_name + ".core.control._control_kernel",
            sources=["roboplan_ik_ros/core/control/kernel/control_kernel.c"],
            include_dirs=[KERNEL_MATH], depends=[KERNEL_MATH + "/kernel_math.h"],
            extra_compile_args=["-O3", "-fno-math-errno"],
            optional=True,  # a failed build leaves the numpy paths
        ),
        *pair_distance_kernel(),
    ] if not NO_COMPILE else [],
    cmdclass={"build_ext": BuildExt},
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="roboplan_ik_ros maintainers",
    maintainer_email="maintainer@example.com",
    description="Real-time differential inverse kinematics as a ROS 2 lifecycle node.",
    license="BSD-3-Clause",
    entry_points={
        "console_scripts": [
            "ik_controller = roboplan_ik_ros.node.ik_controller:main",
            "mock_robot = roboplan_ik_ros.sim.mock_robot:main",
            "mock_camera = roboplan_ik_ros.sim.mock_camera:main",
            "roboplan_ik_demo = roboplan_ik_ros.demo:main",
        ],
    },
)
