"""The accepted range of every numeric key that is checked in more than one place, declared once.

A key of the YAML config that is also a runtime parameter (``node.state_timeout`` and
``state_timeout``, ``tasks[].task_gain`` and ``tasks.<task>.task_gain``) is checked by the YAML loader
(:mod:`..config`, :mod:`.control.loop_config`), by the core object it configures
(:class:`~.oink.tasks.task.Task`, :class:`~.oink.barriers.barrier.Barrier`) and by the node's parameter
validation (``node/parameters.py``): all read their :class:`~.errors.Range` here, so the ranges and the
error texts cannot drift apart. Keys are spelled as in the configuration reference (docs/configuration.md:
``node.<key>``, ``solver.<key>``). The ranges are declared with the keys (:func:`~.keys.key`) and added
here by their owners: the ``node:`` section's (``node.<key>``) by :mod:`.control.loop_config`, the task,
limit and barrier kinds' (``tasks[].<key>``, ``barriers[].<key>``) by :mod:`.oink.kind`, the ``solver:``,
``robot:`` and ``perception:`` sections' by :mod:`.oink.solver_config`, :mod:`.model.robot_config` and
:mod:`.model.perception_config`.
"""

from __future__ import annotations

from .errors import Range

RANGES: dict[str, Range] = {}  # filled by the declaring modules (above)


def check_key(value, key: str, path: str, size: int | None = None):
    """``value`` checked against ``RANGES[key]`` (an InvalidInputError naming ``path`` if refused)."""
    return RANGES[key].check(value, path, size)

