"""``python -m roboplan_ik_ros.demo`` (what `make demo` runs): the demo's command line, ``main`` in __init__.py."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
