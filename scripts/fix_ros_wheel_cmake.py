"""Point the ROS 2 wheels' exported CMake files at this interpreter (quirk 2 in ros2-on-pip.md).

The ros-* wheels were built in a manylinux container and their *.cmake files hard-code that
container's Python include dir and numpy include dir (/opt/python/cp3XX-cp3XX/...). Rewrite both
to this interpreter's paths so rosidl can build roboplan_ik_interfaces. Idempotent.

Usage: $VENV/bin/python scripts/fix_ros_wheel_cmake.py $VENV
"""

import re
import sys
import sysconfig
from pathlib import Path

import numpy

NUMPY_RE = re.compile(r"/opt/python/cp3\d+-cp3\d+/lib/python3\.\d+/site-packages/numpy/(?:_core|core)/include")
PYINC_RE = re.compile(r"/opt/python/cp3\d+-cp3\d+/include/python3\.\d+")


def main() -> int:
    prefix = Path(sys.argv[1] if len(sys.argv) > 1 else sys.prefix)
    py_include = sysconfig.get_paths()["include"]
    np_include = numpy.get_include()
    if not (Path(py_include) / "Python.h").is_file():
        print(f"error: Python.h not found in {py_include} (install the Python dev headers, e.g. python3-dev)",
              file=sys.stderr)
        return 1
    changed = 0
    for f in sorted((prefix / "share").glob("**/*.cmake")):
        text = f.read_text(errors="surrogateescape")
        if "/opt/python/" not in text:
            continue
        new = NUMPY_RE.sub(np_include, text)
        new = PYINC_RE.sub(py_include, new)
        if new != text:
            f.write_text(new, errors="surrogateescape")
            changed += 1
    print(f"   rewrote interpreter paths in {changed} cmake file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
