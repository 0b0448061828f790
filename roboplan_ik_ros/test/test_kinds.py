"""The registry of kinds (core/oink/kind.py): every registered task, limit and barrier type has an example
entry here, a row in docs/configuration.md, builds from YAML on the Panda, and (tasks, barriers) has a
Jacobian equal to central finite differences of its error / value at random configurations (a task whose
error is an asked change rather than target - measured exposes ``measured``: then J = -d(measured)/dq;
a step-reference task, ``Task.step_reference``, has minus a selection of joints).

A new kind adds its example below; the test fails until it does (and until its docs row exists)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from models import finite_difference, robot, scene
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.oink.controller import OinkController
from roboplan_ik_ros.core.oink.kind import SECTIONS, BuildContext, kinds

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
STEP = 1e-6  # [rad]
HAND = "panda_hand_tcp"

# One YAML entry per registered kind (Panda, group "arm"); a target-free entry makes the kind hold its start.
EXAMPLES = {
    "tasks": {
        "frame": {"name": "t", "type": "frame", "frame": HAND, "position_cost": [1, 2, 3], "orientation_cost": 0.5},
        "configuration": {"name": "t", "type": "configuration", "weights": 0.1},
        "com": {"name": "t", "type": "com", "cost": [1, 2, 0.5]},
        "look_at": {"name": "t", "type": "look_at", "frame": HAND, "axis": [0.2, 0.1, 1.0], "distance": 0.5,
                    "pointing_cost": 2.0},
        "relative_frame": {"name": "t", "type": "relative_frame", "frame": HAND, "reference": "panda_link3",
                           "position_cost": [1, 2, 3], "orientation_cost": 0.5},
        "manipulability": {"name": "t", "type": "manipulability", "frame": HAND, "cost": 0.5, "rate": 0.2},
        "joint": {"name": "t", "type": "joint", "joints": ["panda_joint4", "panda_joint2"], "weights": [1, 2]},
        "damping": {"name": "t", "type": "damping", "cost": [1, 2, 3, 4, 5, 6, 7]},
        "low_acceleration": {"name": "t", "type": "low_acceleration", "cost": 0.5},
        "joint_velocity": {"name": "t", "type": "joint_velocity", "cost": [1, 1, 2, 2, 3, 3, 4]},
    },
    "limits": {
        "position": {"type": "position"},
        "velocity": {"type": "velocity"},
        "acceleration": {"type": "acceleration", "a_max": 10.0, "j_max": 5000.0},
    },
    "barriers": {
        "position": {"name": "b", "type": "position", "frame": HAND, "p_min": [-1, -1, 0.1], "p_max": [1, 1, 1.5]},
        "collision": {"name": "b", "type": "collision", "pairs": "self", "n_collision_pairs": 4,
                      "broad_phase_cutoff": 1.0, "rows_per_pair": 1},
        "self_collision": {"name": "b", "type": "self_collision", "n_collision_pairs": 4, "broad_phase_cutoff": 1.0,
                           "rows_per_pair": 1},
        "singularity": {"name": "b", "type": "singularity", "frame": HAND, "sigma_min": 0.01},
        "com": {"name": "b", "type": "com", "p_min": [-1, -1, -1], "p_max": [1, 1, 2]},
        "joint_limit": {"name": "b", "type": "joint_limit", "margin_fraction": 0.1},
        "sphere": {"name": "b", "type": "sphere", "frame": HAND, "center_frame": "panda_link3", "center": [0.1, 0, 0.05],
                   "radius": 0.2, "inside": False},  # a centre that moves: its Jacobian is checked too
    },
}


def _all_kinds():
    return [(section, t) for section in SECTIONS for t in kinds(section)]


def _build(section: str, entry: dict, q=None):
    """The controller of a config with ``entry`` (plus a frame task when the entry is not a task) and the object."""
    config = {"robot": {"group": "arm"}, "tasks": [{"name": "ee", "type": "frame", "frame": HAND}]}
    config[section] = [entry]
    cfg = load_config(config)
    r = robot("panda")
    s = scene_from_config(r.urdf_xml, r.srdf_xml, cfg.robot, r.package_paths)
    ctrl = OinkController(s, cfg, 0.01, s.named_configuration("default") if q is None else q)
    obj = {"tasks": lambda: next(iter(ctrl.tasks.values())), "limits": lambda: ctrl.limits[0],
           "barriers": lambda: ctrl.barriers[0]}[section]()
    return ctrl, obj


def test_every_registered_kind_has_an_example_and_a_docs_row():
    docs = DOCS.read_text(encoding="utf-8")
    for section, t in _all_kinds():
        assert t in EXAMPLES[section], f"{section} kind {t!r}: add an example entry to test_kinds.py"
        assert f"| {section} | `{t}`" in docs or f"(`{t}`)" in docs, f"{section} kind {t!r}: no row in {DOCS.name}"
    for section, examples in EXAMPLES.items():
        assert set(examples) <= set(kinds(section)), "an example of a kind that is not registered"


@pytest.mark.parametrize("section, type_", _all_kinds())
def test_every_kind_builds_from_yaml_and_refuses_keys_of_other_kinds(section, type_):
    entry = EXAMPLES[section][type_]
    ctrl, obj = _build(section, entry)
    kind = kinds(section)[type_]
    built = getattr(ctrl, section)
    built = list(built.values()) if isinstance(built, dict) else built
    assert len(built) == 1 and built[0] is obj, f"{section}: {len(built)} objects built from one entry"
    # built by this kind's builder: the same class as the builder makes of the parsed entry on its own
    parsed = getattr(ctrl.config, section)[0]  # (self_collision parses as a collision barrier of pairs: self)
    own = kind.build(parsed, BuildContext(ctrl.oink.robot, 0.01, ctrl.scene.named_configuration("default")))
    assert type(obj) is type(own), f"{section} kind {type_!r} built a {type(obj).__name__}, its builder a {type(own).__name__}"
    if "name" in entry:
        assert obj.name == entry["name"]
    foreign = sorted({f.name for k in kinds(section).values() for f in dataclasses.fields(k.config)}
                     - set(kind.keys()) - {"given_keys"})
    for key in foreign[:3]:  # a key of another kind is refused by name
        with pytest.raises(InvalidInputError, match=rf"{section}\[0\]\.{key}: does not apply to type"):
            load_config({"robot": {"group": "arm"}, "tasks": [{"name": "ee", "type": "frame", "frame": HAND}],
                         section: [{**EXAMPLES[section][type_], key: 1.0}]})


def _kinematics(ctrl, q):
    model, data = ctrl.scene.model, ctrl.oink.data
    pin.computeJointJacobians(model, data, q)
    pin.updateFramePlacements(model, data)
    pin.updateGeometryPlacements(model, data, ctrl.scene.collision_model, ctrl.oink.geom_data)


def _finite_difference(ctrl, q, f):
    return finite_difference(ctrl.scene, ctrl.oink.group.v_indices, q, f, STEP)


@pytest.mark.parametrize("section, type_", [(s, t) for s, t in _all_kinds() if s != "limits"])
def test_every_task_and_barrier_jacobian_is_the_derivative_of_its_error_or_value(section, type_):
    s = scene("panda")
    rng = np.random.default_rng(11)
    for _ in range(3):
        q = s.random_configuration(rng, s.group("arm"))
        ctrl, obj = _build(section, EXAMPLES[section][type_], q)  # targets at q: the errors are small there
        if section == "tasks" and obj.step_reference:  # the error is a step reference: J = -(a selection)
            obj.update(q, ctrl.oink.data)
            J = obj.jacobian
            rows_ok = np.all((J == 0.0) | (J == -1.0)) and np.all(np.count_nonzero(J, axis=1) == 1)
            assert rows_ok and len(set(np.argmin(J, axis=1))) == len(J), \
                f"tasks {type_}: a step-reference task's jacobian is minus a selection of distinct joints"
            continue
        data, geom = ctrl.oink.data, ctrl.oink.geom_data

        def measured(qq):
            _kinematics(ctrl, qq)
            if section == "tasks":
                obj.update(qq, data)
                # a task without a target (manipulability) asks for a change of what it measures: J = -d(measured)/dq
                return -obj.measured.copy() if hasattr(obj, "measured") else obj.error.copy()
            obj.update(qq, data, geom)
            return obj.value.copy()

        expected = _finite_difference(ctrl, q, measured)
        measured(q)
        J = obj.jacobian.copy()
        used = np.isfinite(obj.value) if section == "barriers" else np.ones(len(J), dtype=bool)
        np.testing.assert_allclose(J[used], expected[used], atol=2e-5,
                                   err_msg=f"{section} {type_}: jacobian != d(error or h)/dq")


@pytest.mark.parametrize("type_", sorted(kinds("barriers")))
def test_a_barrier_has_a_world_box_exactly_when_it_keeps_a_point_in_its_configured_box(type_):
    """Barrier.world_box (what RViz draws, node/markers.py): the configured corners of a box kind, None for the
    others."""
    entry = EXAMPLES["barriers"][type_]
    _, barrier = _build("barriers", entry)
    if "p_min" in entry:
        np.testing.assert_array_equal(barrier.world_box[0], entry["p_min"])
        np.testing.assert_array_equal(barrier.world_box[1], entry["p_max"])
    else:
        assert barrier.world_box is None
