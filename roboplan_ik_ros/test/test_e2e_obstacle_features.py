"""Obstacles added at run time on ``~/collision_objects``, end to end (issue 22): ``ik_controller`` (the shipped
panda.yaml with its table and ``obstacles`` barrier) and the mock Panda (a strict drive) as separate
processes over DDS; every command checked by the harness.

The oracle is this test's own: the example-robot-data URDF's collision geometry through pinocchio and
coal directly (each mesh as its convex hull, a volume: coal's distance to a mesh *surface* is positive
for a box inside it; the node uses hulls too, ``robot.convex_hulls``, but builds them itself), the
obstacles as coal boxes placed by this test's forward kinematics. Nothing of ``core`` is used.

- ``~/solve_ik`` and ``~/solve_path`` respect a box added at run time: a goal whose answer (asked before
  the box) puts the forearm inside the box is solved afterwards, clear of it, when seeded at another answer
  clear of it (found before the box, from seeds spread over the joint ranges), and refused (NO_SOLUTION)
  once a second box fills the hand's place at the goal; a path whose straight line runs the hand through a box stops before it (NO_SOLUTION,
  ``fraction`` < 1), every returned point clear of it;
- an object attached to a link moves with the link: the distance ``~/status`` reports between an
  attached rod and a wall is the oracle's at the measured pose, before and after the hand moves; and
  ``~/solve_ik`` refuses a goal that would push the rod into the wall (the same goal is solved before
  the rod is attached);
- ``touch_links``: an object attached inside the fingers, with the fingers as touch links, does not count
  as a collision (``~/status`` distance positive, ``~/solve_ik`` solves); the same object re-added without
  them does (the oracle confirms the overlap; status negative, the same request NO_SOLUTION).

No assertion is about a rate, a duration or a latency; the timeouts are generous (60 s).
"""

from __future__ import annotations

import functools

import math

import coal
import numpy as np
import pinocchio as pin

from e2e import (ARM, ROOT_FRAME, TIP, Rig, panda, pose_errors, pose_goal_msg, report, rig,  # noqa: F401 - fixture
                 seed_msg, write_config)
from test_node_obstacles import Objects, box

WAIT = 60.0
NODE = {"activation_timeout": 20.0}
GJK_TOL = 1e-5  # [m] coal's distance precision (test_obstacles.py): "clear" is distance > -GJK_TOL
FINGERS = ["panda_leftfinger", "panda_rightfinger"]


# ===================================================================================== oracle
class Geometry:
    """The Panda's collision geometry from its URDF, meshes as convex hulls (pinocchio + coal only)."""

    def __init__(self) -> None:
        from roboplan_ik_ros.core.model.robots import load_example_robot  # file lookup only

        self.P = panda()
        rd = load_example_robot("panda")
        self.geom = pin.buildGeomFromUrdfString(self.P.model, rd.urdf_xml, pin.COLLISION,
                                                package_dirs=list(rd.package_paths))
        for o in self.geom.geometryObjects:
            if isinstance(o.geometry, coal.BVHModelBase):
                o.geometry.buildConvexHull(True, "Qt")
                o.geometry = o.geometry.convex
        self.link_of = [self.P.model.frames[o.parentFrame].name for o in self.geom.geometryObjects]

    def _data(self, q7):
        q = pin.neutral(self.P.model)
        q[self.P.iq] = q7
        data = self.P.model.createData()
        pin.framesForwardKinematics(self.P.model, data, q)
        return data

    def frame(self, q7, name: str) -> pin.SE3:
        return self._data(q7).oMf[self.P.model.getFrameId(name)].copy()

    def link_distances(self, q7, shape, T_world_shape: pin.SE3, skip=()) -> dict[str, float]:
        """Signed distance [m] of each robot link (its nearest geometry) to ``shape`` at ``T_world_shape``."""
        data = self._data(q7)
        out: dict[str, float] = {}
        for o, link in zip(self.geom.geometryObjects, self.link_of):
            if link in skip:
                continue
            T = data.oMi[o.parentJoint] * o.placement
            d = _distance(o.geometry, T, shape, T_world_shape)
            out[link] = min(out.get(link, math.inf), d)
        return out

    def clearance(self, q7, shape, T_world_shape: pin.SE3, skip=()) -> float:
        return min(self.link_distances(q7, shape, T_world_shape, skip).values())

    def aabb_center(self, q7, link: str) -> np.ndarray:
        """World centre of the local bounding box of the first collision geometry of ``link``."""
        data = self._data(q7)
        k = self.link_of.index(link)
        o = self.geom.geometryObjects[k]
        o.geometry.computeLocalAABB()
        bb = o.geometry.aabb_local
        return (data.oMi[o.parentJoint] * o.placement).act(0.5 * (np.array(bb.min_) + np.array(bb.max_)))


def _distance(a, Ta: pin.SE3, b, Tb: pin.SE3) -> float:
    return coal.distance(a, coal.Transform3s(Ta.rotation, Ta.translation), b,
                         coal.Transform3s(Tb.rotation, Tb.translation), coal.DistanceRequest(), coal.DistanceResult())


@functools.lru_cache(maxsize=None)
def geometry() -> Geometry:
    return Geometry()


# ===================================================================================== helpers
def _start(rig: Rig) -> Objects:
    rig.start_mock()
    rig.start_ik(write_config(rig.log_dir, node=NODE))
    rig.activate()
    rig.wait_mode("waiting_for_goal", WAIT, since=rig.events["activate_request"])
    rig.wait(lambda: "IK worker process ready" in rig.ik.log(), WAIT, "the node's IK worker process ready")
    return Objects(rig)


def _q(rig: Rig, names, positions) -> np.ndarray:
    """The arm's 7 values (ARM order) of named positions, inside the joint limits."""
    names = list(names)
    q7 = np.array([positions[names.index(j)] for j in ARM])
    rig.require(rig.panda.within_limits(q7, 1e-9), f"outside the joint limits: {q7}")
    return q7


def _points(rig: Rig, trajectory) -> list[np.ndarray]:
    return [_q(rig, trajectory.joint_names, p.positions) for p in trajectory.points]


def _solve_ik(rig: Rig, client, T: pin.SE3, q_seed, what: str):
    from roboplan_ik_interfaces.srv import SolveIK

    return rig.call(client, SolveIK.Request(goals=[pose_goal_msg(T)], seed=seed_msg(q_seed), max_time=1.0), WAIT, what)


def _status_after(rig: Rig, t: float, what: str):
    """The second status received after ``t`` (the first may have been made before)."""
    rig.wait(lambda: len(rig.status_since(t)) >= 2, WAIT, what)
    return rig.status_since(t)[1]


# ===================================================================================== solve_ik, solve_path
def test_solve_ik_and_solve_path_answers_respect_a_box_added_at_run_time(rig):
    import time

    from roboplan_ik_interfaces.msg import CollisionObject
    from roboplan_ik_interfaces.srv import SolveIK, SolvePath

    objects = _start(rig)
    G = geometry()
    P = rig.panda
    ik = rig.node.create_client(SolveIK, f"/{rig.ik.name}/solve_ik")
    path_client = rig.node.create_client(SolvePath, f"/{rig.ik.name}/solve_path")
    q0 = rig.measured()
    T0 = P.fk(q0)

    # --- solve_ik: a goal 45 cm to the side and 20 cm down, seeded at the current pose
    goal = pin.SE3(T0.rotation, T0.translation + [0.0, 0.45, -0.2])
    res = _solve_ik(rig, ik, goal, q0, "~/solve_ik before the box")
    assert res.success, res.message
    q_free = _q(rig, res.solution.name, res.solution.position)
    # a 6 cm box around the forearm (panda_link5's geometry) of that answer
    c = G.aabb_center(q_free, "panda_link5")
    block_shape, T_block = coal.Box(0.06, 0.06, 0.06), pin.SE3(np.eye(3), c)
    assert G.clearance(q_free, block_shape, T_block) < -0.05, "the answer before does not go through the box"
    assert G.clearance(q0, block_shape, T_block) > 0.05, "the box touches the robot where it stands"
    assert G.clearance(q_free, block_shape, T_block, skip=("panda_link5", "panda_link4", "panda_link6")) > 0.0, \
        "the goal pose itself (hand) is inside the box: no answer could avoid it"
    # another answer to the same goal, clear of the box by 1 cm (the oracle's): the node's, from seeds spread
    # over the joint ranges (before the box: each also free of the table and of self-collision by the node)
    rng = np.random.default_rng(5)
    q_clear, tried = None, 0
    while q_clear is None and tried < 40:
        tried += 1
        q_try = P.lower + (P.upper - P.lower) * rng.uniform(0.1, 0.9, 7)
        res = _solve_ik(rig, ik, goal, q_try, f"~/solve_ik before the box, seed {tried}")
        if res.success:
            q = _q(rig, res.solution.name, res.solution.position)
            if G.clearance(q, block_shape, T_block) > 0.01:
                q_clear = q
    rig.require(q_clear is not None, f"no answer of {tried} clears the box by 1 cm: the scenario needs one")
    objects.send(box("block", (0.06, 0.06, 0.06), c))
    objects.wait_listed(lambda o: "block" in o, "block listed")
    # seeded at the clear answer, the goal is solved, clear of the box
    res = _solve_ik(rig, ik, goal, q_clear, "~/solve_ik with the box, seeded at an answer clear of it")
    assert res.success, f"seeded at an answer 1 cm clear of the box: {res.message}"
    q = _q(rig, res.solution.name, res.solution.position)
    clearance = G.clearance(q, block_shape, T_block)
    assert clearance > -GJK_TOL, f"the answer is {-clearance * 1e3:.1f} mm inside the box"
    assert max(pose_errors(goal, P.fk(q))) <= 1e-3
    # a second box where the hand must be at the goal: every answer goes through it
    hand_shape, T_hand_block = coal.Box(0.06, 0.06, 0.06), pin.SE3(np.eye(3), goal.translation.copy())
    assert G.clearance(q_clear, hand_shape, T_hand_block) < -0.01, "the hand at the goal is not inside the hand box"
    objects.send(box("hand_block", (0.06, 0.06, 0.06), goal.translation))
    objects.wait_listed(lambda o: "hand_block" in o, "hand_block listed")
    res_blocked = _solve_ik(rig, ik, goal, q_clear, "~/solve_ik with the hand's place blocked")
    assert not res_blocked.success and res_blocked.error_code == SolveIK.Response.NO_SOLUTION and res_blocked.message, \
        res_blocked
    assert len(res_blocked.solution.name) == 0
    objects.send(box("hand_block", (0.06, 0.06, 0.06), goal.translation, operation=CollisionObject.REMOVE))
    objects.wait_listed(lambda o: "hand_block" not in o, "hand_block removed")
    report("solve_ik with a box at run time", forearm_in_box_before_m=G.clearance(q_free, block_shape, T_block),
           clear_answer_found_after_seeds=tried, clearance_after_m=clearance,
           hand_blocked=SolveIK.Response.NO_SOLUTION)

    # --- solve_path: a straight line 40 cm along y whose middle runs the hand through a 4 cm cube
    start = rig.measured()
    T_start = P.fk(start)
    n = 41
    line = [pin.SE3(T_start.rotation, T_start.translation + [0.0, 0.4 * s, 0.0]) for s in np.linspace(0.0, 1.0, n)]
    cube_c = T_start.translation + [0.0, 0.25, 0.0]
    cube, T_cube = coal.Box(0.04, 0.04, 0.04), pin.SE3(np.eye(3), cube_c)
    assert G.clearance(start, cube, T_cube) > 0.05, "the cube touches the robot where it stands"

    def request():
        return SolvePath.Request(waypoints=[pose_goal_msg(T) for T in line], seed=seed_msg(start), max_joint_step=0.1,
                                 max_time=0.5)

    res = rig.call(path_client, request(), WAIT, "~/solve_path before the cube")
    assert res.success and res.fraction == 1.0, res.message
    bare = _points(rig, res.trajectory)
    crossing = [k for k, q in enumerate(bare) if G.clearance(q, cube, T_cube) < 0.0]
    assert crossing, "the straight line does not run through the cube: the test cannot fail"
    objects.send(box("cube", (0.04, 0.04, 0.04), cube_c))
    objects.wait_listed(lambda o: "cube" in o, "cube listed")
    t = time.perf_counter()
    res = rig.call(path_client, request(), WAIT, "~/solve_path with the cube")
    assert not res.success and res.error_code == SolvePath.Response.NO_SOLUTION, (res.error_code, res.message)
    assert res.fraction < 1.0 and res.message, res
    points = _points(rig, res.trajectory)
    # the seed, then each solved waypoint: fewer than to the first waypoint that crossed the cube
    assert len(points) == round(res.fraction * n) + 1 if points else res.fraction == 0.0
    clearances = [G.clearance(q, cube, T_cube) for q in points]
    assert min(clearances, default=math.inf) > -GJK_TOL, f"a returned point is inside the cube: {clearances}"
    report("solve_path with a cube at run time", first_crossing_waypoint=crossing[0], fraction=res.fraction,
           min_clearance_m=min(clearances, default=math.inf), answered_after_s=time.perf_counter() - t)
    assert rig.last_status().mode == "waiting_for_goal"  # no request moved the robot
    rig.check()


# ===================================================================================== attached objects
ROD = (0.25, 0.02, 0.02)  # [m] a rod along the hand's x axis, beside it
# its centre in panda_hand's frame: x from 0.075 to 0.325, 4 cm below the hand's base (clear of panda_link6 by
# ~9 cm, so that the wall is the rod's nearest obstacle)
T_HAND_ROD = pin.SE3(np.eye(3), np.array([0.2, 0.0, 0.04]))


def test_an_attached_object_moves_with_its_link_and_touch_links_are_not_checked(rig):
    import time

    from roboplan_ik_interfaces.msg import CollisionObject
    from roboplan_ik_interfaces.srv import SolveIK

    objects = _start(rig)
    G = geometry()
    P = rig.panda
    ik = rig.node.create_client(SolveIK, f"/{rig.ik.name}/solve_ik")
    q0 = rig.measured()
    T0 = P.fk(q0)
    rod_shape = coal.Box(*ROD)

    def T_rod(q7) -> pin.SE3:
        return G.frame(q7, "panda_hand") * T_HAND_ROD

    # a wall 4 cm beyond the rod's tip, along the rod
    along = T_rod(q0).rotation[:, 0]
    wall_c = T_rod(q0).translation + along * (ROD[0] / 2 + 0.04 + 0.05)
    wall_shape, T_wall = coal.Box(0.1, 0.1, 0.1), pin.SE3(np.eye(3), wall_c)
    assert G.clearance(q0, wall_shape, T_wall) > 0.15, "the wall is near the robot itself"
    # the goal that would push the rod 10 cm into the wall: the hand 16 cm toward it; solvable without the rod
    push = pin.SE3(T0.rotation, T0.translation + along * 0.16)
    objects.send(box("wall", (0.1, 0.1, 0.1), wall_c))
    objects.wait_listed(lambda o: "wall" in o, "wall listed")
    res = _solve_ik(rig, ik, push, q0, "~/solve_ik toward the wall, no rod")
    assert res.success, res.message
    q_push = _q(rig, res.solution.name, res.solution.position)
    assert _distance(rod_shape, T_rod(q_push), wall_shape, T_wall) < -0.05  # the rod would be in the wall

    rod = box("rod", ROD, T_HAND_ROD.translation, frame="panda_hand")
    objects.send(rod)
    objects.wait_listed(lambda o: "rod" in o, "the rod listed")

    def expect_status(q7, what: str) -> tuple[float, float]:
        expected = _distance(rod_shape, T_rod(q7), wall_shape, T_wall)
        st = rig.wait_status(lambda s: s.closest_obstacle == "wall" and s.closest_obstacle_link == "rod (attached)"
                             and abs(s.closest_obstacle_distance - expected) <= 1e-4, WAIT,
                             f"~/status: the rod {expected * 1e3:.2f} mm from the wall ({what}); last "
                             f"{(rig.last_status().closest_obstacle, rig.last_status().closest_obstacle_link, rig.last_status().closest_obstacle_distance)}")
        return expected, st.closest_obstacle_distance

    before = expect_status(q0, "at the start")

    # the hand 1.5 cm toward the wall (the rod stays the wall's nearest, 2.5 cm > d_min 2 cm from it)
    closer = pin.SE3(T0.rotation, T0.translation + along * 0.015)
    t_goal = rig.send_pose(closer)
    rig.wait_reached(closer, WAIT, since=t_goal)
    settled = time.perf_counter()
    rig.wait_commands(50, since=settled, timeout=WAIT)
    q1 = rig.measured()
    after = expect_status(q1, "after the hand moved")
    assert after[0] < before[0] - 0.01, (before, after)  # the rod moved with the hand
    # the rod as seen by the service: the goal that pushes it into the wall has no answer now
    res = _solve_ik(rig, ik, push, q1, "~/solve_ik toward the wall, rod attached")
    assert not res.success and res.error_code == SolveIK.Response.NO_SOLUTION, res.message
    report("attached rod follows panda_hand", distance_before_m=before[1], oracle_before_m=before[0],
           distance_after_m=after[1], oracle_after_m=after[0])

    # --- touch_links: a part held between the fingers
    grip_size, grip_c = (0.03, 0.1, 0.04), np.array([0.0, 0.0, 0.09])  # in panda_hand's frame: through the fingers
    grip_shape, T_hand_grip = coal.Box(*grip_size), pin.SE3(np.eye(3), grip_c)
    overlap = {f: d for f, d in G.link_distances(q1, grip_shape, G.frame(q1, "panda_hand") * T_hand_grip).items()
               if f in FINGERS}
    assert max(overlap.values()) < -0.01, f"the part does not overlap the fingers: {overlap}"
    reachable = pin.SE3(closer.rotation, closer.translation + [0.0, 0.0, 0.05])

    grip = box("grip", grip_size, grip_c, frame="panda_hand")
    grip.touch_links = list(FINGERS)
    t = time.perf_counter()
    objects.send(grip)
    objects.wait_listed(lambda o: "grip" in o and list(o["grip"].touch_links) == FINGERS, "grip with touch links")
    st = _status_after(rig, t, "a status with the grip")
    assert st.closest_obstacle_distance > 0.0 and not (st.closest_obstacle == "grip"
                                                       and st.closest_obstacle_link in FINGERS), st
    res = _solve_ik(rig, ik, reachable, q1, "~/solve_ik holding the grip")
    assert res.success, res.message

    grip.touch_links = []  # ADD again (replaces it): now the fingers are checked against it
    t = time.perf_counter()
    objects.send(grip)
    objects.wait_listed(lambda o: "grip" in o and not list(o["grip"].touch_links), "grip without touch links")
    st = rig.wait_status(lambda s: s.closest_obstacle == "grip", WAIT, "~/status: the grip nearest", since=t)
    assert st.closest_obstacle_link in FINGERS and st.closest_obstacle_distance < 0.0, st
    res = _solve_ik(rig, ik, reachable, q1, "~/solve_ik, grip without touch links")
    assert not res.success and res.error_code == SolveIK.Response.NO_SOLUTION, res.message
    report("touch_links", finger_overlap_m=min(overlap.values()), status_without_touch_links_m=st.closest_obstacle_distance)

    objects.send(box("grip", (), (0.0, 0.0, 0.0), operation=CollisionObject.REMOVE))
    objects.wait_listed(lambda o: "grip" not in o, "grip removed")
    rig.check()
