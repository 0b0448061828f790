"""A ControlLoop from a YAML config, everything it says included (:func:`control_loop_from_config`, also
``ControlLoop.from_config``); the loop keys of the ``node:`` section are parsed in :mod:`.loop_config` (re-exported
here)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config import IKConfig
from .control_loop import ControlLoop, LogFn
from .loop_config import (LOOP_KEYS, load_loop_config, split_node_section,  # noqa: F401 - re-exported
                          unapplied_loop_keys)


def control_loop_from_config(config: IKConfig | Mapping[str, Any] | str | Path, urdf_xml: str, srdf_xml: str,
                             package_paths=(), log: LogFn | None = None,
                             overrides: Mapping[str, Any] | None = None) -> ControlLoop:
    """:meth:`ControlLoop.from_config`: the ControlLoop the YAML describes, as the node builds it."""
    return ControlLoop.from_config(config, urdf_xml, srdf_xml, package_paths, log, overrides)
