"""The sphere barrier (``type: sphere``): its row (a moving centre's Jacobian included) and, in closed loop on
the Panda, a hand goal outside a keep-in sphere stops the hand at its surface, and a target dragged through a
keep-out sphere takes the hand around it; never beyond the barrier tolerance. At the centre (no normal) the
row is zeroed and the failure names the barrier."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from models import robot
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.errors import InvalidInputError
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.oink.controller import OinkController

HAND = "panda_hand_tcp"
DT = 0.002
TOLERANCE = 1e-4  # solver.barrier_tolerance (default)


def _scene():
    r = robot("panda")
    cfg = load_config({"robot": {"group": "arm"}, "tasks": [{"name": "ee", "type": "frame", "frame": HAND}]})
    return scene_from_config(r.urdf_xml, r.srdf_xml, cfg.robot, r.package_paths)


def _controller(s, barriers, q):
    cfg = load_config({"robot": {"group": "arm"}, "tasks": [{"name": "ee", "type": "frame", "frame": HAND}],
                       "limits": [{"type": "position"}, {"type": "velocity"}], "barriers": barriers})
    return OinkController(s, cfg, DT, q)


def _hand(s, q):
    return s.frame_pose(q, HAND).translation


def test_row_value_and_jacobian_with_a_moving_centre():
    s = _scene()
    rng = np.random.default_rng(2)
    for inside in (True, False):
        for center_frame, center in (("", [0.4, 0.1, 0.5]), ("panda_link4", [0.05, -0.1, 0.02])):
            q = s.random_configuration(rng, s.group("arm"))
            entry = {"name": "s", "type": "sphere", "frame": HAND, "center": center, "radius": 0.3, "inside": inside}
            if center_frame:
                entry["center_frame"] = center_frame
            ctrl = _controller(s, [entry], q)
            b, data = ctrl.barriers[0], ctrl.oink.data

            def h(qq):
                pin.computeJointJacobians(s.model, data, qq)
                pin.updateFramePlacements(s.model, data)
                b.update(qq, data, None)
                return b.value[0]

            c = (s.frame_pose(q, center_frame) * pin.SE3(np.eye(3), np.array(center))).translation if center_frame \
                else np.array(center)
            d = np.linalg.norm(_hand(s, q) - c)
            assert h(q) == pytest.approx(0.3 - d if inside else d - 0.3, abs=1e-12)
            J = b.jacobian[0].copy()
            fd = []
            for k in range(7):
                dv = np.zeros(s.model.nv)
                dv[k] = 1e-6
                fd.append((h(s.integrate(q, dv)) - h(s.integrate(q, -dv))) / 2e-6)
            np.testing.assert_allclose(J, fd, atol=1e-8)
            pin.framesForwardKinematics(s.model, data, q)
            assert b.evaluate(data, None)[0] == pytest.approx(0.3 - d if inside else d - 0.3, abs=1e-12)
            assert b.row_names == ["inside" if inside else "outside"]


def _run(ctrl, s, q, target_of, ticks, center, radius, inside):
    """Step with the frame task's target from ``target_of(k, hand)``; h = the hand's signed margin each tick."""
    T = s.frame_pose(q, HAND)
    h = []
    for k in range(ticks):
        ctrl.tasks["ee"].set_target(pin.SE3(T.rotation, target_of(k, _hand(s, q))))
        out = ctrl.step(q)
        assert out.result.ok, out.result.status
        q = out.q_next
        d = np.linalg.norm(_hand(s, q) - center)
        h.append(radius - d if inside else d - radius)
    return q, np.array(h)


@pytest.mark.parametrize("direction", [(1.0, 0.0, 0.0), (0.3, -1.0, 0.5)])
def test_a_goal_outside_a_keep_in_sphere_stops_the_hand_at_its_surface(direction):
    s = _scene()
    q = s.named_configuration("default")
    center, radius = _hand(s, q) + [0.02, 0.0, -0.03], 0.12
    u = np.array(direction) / np.linalg.norm(direction)
    goal = center + 0.4 * u  # 0.28 m beyond the surface

    def leashed(k, hand):  # the node's goal leash: the target at most 5 cm from the hand
        e = goal - hand
        return hand + e * min(1.0, 0.05 / np.linalg.norm(e))

    ctrl = _controller(s, [{"name": "s", "type": "sphere", "frame": HAND, "center": center.tolist(),
                            "radius": radius, "inside": True, "gain": 20.0}], q)
    q, h = _run(ctrl, s, q, leashed, 2000, center, radius, True)
    assert h.min() >= -TOLERANCE
    assert h[-1] < 1e-3  # at the surface,
    np.testing.assert_allclose((_hand(s, q) - center) / (radius - h[-1]), u, atol=0.02)  # nearest the goal


def test_a_target_dragged_through_a_keep_out_sphere_goes_around_it():
    s = _scene()
    q0 = s.named_configuration("default")
    start = _hand(s, q0)
    goal, center, radius = start + [0.0, 0.4, 0.0], start + [0.0, 0.2, 0.0], 0.08  # the centre on the path

    def dragged(k, hand):  # the target moves along the straight line at 0.2 m/s
        return start + (goal - start) * min(1.0, k * DT * 0.2 / 0.4)

    q, h_free = _run(_controller(s, [], q0.copy()), s, q0.copy(), dragged, 2500, center, radius, False)
    assert h_free.min() < -0.07  # without the barrier the hand goes through the sphere
    ctrl = _controller(s, [{"name": "s", "type": "sphere", "frame": HAND, "center": center.tolist(),
                            "radius": radius, "inside": False}], q0.copy())
    q, h = _run(ctrl, s, q0.copy(), dragged, 2500, center, radius, False)
    assert h.min() >= -TOLERANCE
    assert np.linalg.norm(_hand(s, q) - goal) < 1e-3  # around it, to the goal


def test_at_the_centre_the_row_is_zero_and_the_failure_names_the_barrier():
    s = _scene()
    q = s.named_configuration("default")
    for inside in (True, False):
        ctrl = _controller(s, [{"name": "ball", "type": "sphere", "frame": HAND, "center": _hand(s, q).tolist(),
                                "radius": 0.1, "inside": inside}], q)
        out = ctrl.step(q)
        b = ctrl.barriers[0]
        assert b.value[0] == pytest.approx(0.1 if inside else -0.1) and not b.jacobian.any()
        if inside:  # deep inside: nothing to keep
            assert out.result.ok
        else:  # violated with no direction out: no step, and a status that says why
            assert not out.result.ok and not out.dq.any()
            assert "'ball'" in out.result.status and "centre" in out.result.status


BASE = {"robot": {"group": "arm"}, "tasks": [{"name": "ee", "type": "frame", "frame": HAND}]}
SPHERE = {"name": "s", "type": "sphere", "frame": HAND, "radius": 0.1, "inside": True}


@pytest.mark.parametrize("change, message", [
    ({"radius": None}, r"barriers\[0\].radius: required for a sphere barrier"),
    ({"inside": None}, r"barriers\[0\].inside: required for a sphere barrier; expected true"),
    ({"frame": None}, r"barriers\[0\].frame: required for a sphere barrier"),
    ({"radius": 0.0}, r"barriers\[0\].radius: expected a finite number > 0 \[m\], got 0.0"),
    ({"inside": "yes"}, r"barriers\[0\].inside: expected true or false or null, got 'yes'"),
    ({"center": [1.0, 2.0]}, r"center: expected 3 values"),
    ({"center_frame": "nowhere"}, r"nowhere"),
    ({"p_min": [0, 0, 0]}, r"barriers\[0\].p_min: does not apply to type 'sphere'"),
])
def test_bad_keys_are_refused_by_name(change, message):
    entry = {k: v for k, v in {**SPHERE, **change}.items() if v is not None}
    with pytest.raises(InvalidInputError, match=message):
        cfg = load_config({**BASE, "barriers": [entry]})
        r = robot("panda")
        s = scene_from_config(r.urdf_xml, r.srdf_xml, cfg.robot, r.package_paths)
        OinkController(s, cfg, DT, s.named_configuration("default"))
