"""Files named in a configuration: plain paths and ``package://<package>/<path>`` URIs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..errors import InvalidInputError

#: the roboplan_ik_ros package folder (holds config/), for package://roboplan_ik_ros/... without ROS
_OWN_PACKAGE = Path(__file__).resolve().parents[3]


def resolve_path(uri: str, package_paths: Sequence[str] = (), what: str = "file") -> Path:
    """The existing file ``uri`` names: a path, or ``package://pkg/rest`` looked up as
    ``<p>/pkg/rest`` (or ``<p>/rest`` when p's folder is named pkg) for each of ``package_paths``,
    then ``<prefix>/share/pkg/rest`` for each prefix of ``AMENT_PREFIX_PATH`` (a ROS install), then
    this package's own source tree for ``package://roboplan_ik_ros/...``.
    Raises naming ``what`` and every place tried."""
    if uri.startswith("package://"):
        package, _, rest = uri[len("package://"):].partition("/")
        tried = []
        for p in package_paths:
            for candidate in (Path(p) / package / rest, Path(p) / rest if Path(p).name == package else None):
                if candidate is not None:
                    tried.append(str(candidate))
                    if candidate.is_file():
                        return candidate
        for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
            candidate = Path(prefix) / "share" / package / rest
            tried.append(str(candidate))
            if candidate.is_file():
                return candidate
        if package == _OWN_PACKAGE.name:  # this package's files from its source tree (no ROS install)
            candidate = _OWN_PACKAGE / rest
            tried.append(str(candidate))
            if candidate.is_file():
                return candidate
        raise InvalidInputError(f"{what}: cannot resolve {uri!r}; tried {tried or 'no package path'}")
    path = Path(uri)
    if not path.is_file():
        raise InvalidInputError(f"{what}: no such file {uri!r}")
    return path
