"""Demo: two arms in one QP. Baxter's hands carry a box held between them along a path.

    python -m roboplan_ik_ros.demo --dual-arm      (what `make demo ARGS=--dual-arm` runs; a few seconds)

The shipped ``config/baxter_dual.yaml`` (group ``both_arms``: 14 joints, a frame task per hand, the grasp as
a ``relative_frame`` task (the right hand's pose in the left hand's frame; ``--no-grasp-task`` drops it), a
posture task, velocity, acceleration and jerk bounds, a self-collision barrier between the arms) runs in the core
:class:`ControlLoop`, the one the ``ik_controller`` node ticks, without ROS: a simulated robot follows
every command exactly, in simulated time (500 Hz). A virtual 0.4 m box, held between the hands in the
SRDF's ``default`` pose, moves around a tilted circle (15 cm across) in front of the robot while it yaws
by +-10 deg, ``--duration`` seconds from rest to rest; each hand's goal (the box's pose times the hand's
grasp) streams at 50 Hz to ``~/left_hand`` and ``~/right_hand`` as the node's topics would.

Prints a table (grasp error: the right hand's pose in the left hand's frame against the grasp, position
and rotation, max and rms; each hand's tracking error against its goal; the peak acceleration and jerk
of the commands as ratios of the bounds; the closest distance between the arms) and saves a plot of
the path (goals vs achieved, top and side views; the grasp error over time). Exit status 0 when the
grasp held (< 5 mm, 2 deg), the bounds were kept (ratios <= 1) and the arms stayed d_min apart.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin

from .figures import pyplot

BOX_LENGTH = 0.40  # [m] between the hands (the SRDF's default pose)
GRASP_LIMITS = (5e-3, np.deg2rad(2.0))  # [m], [rad]: the grasp held
ARM_ROOTS = {"left": "left_s0", "right": "right_s0"}


def default_config() -> str:
    from .node.ik_controller import default_config_file

    return default_config_file("baxter_dual")


def box_path(T_world_box0: pin.SE3, duration: float, radius: float = 0.075, yaw: float = np.deg2rad(10.0)):
    """The box's pose at time t: once around a circle through its start, in a plane tilted 45 deg up from
    the horizontal (its x axis the world's), yawing by +-``yaw``; a minimum-jerk timing from rest to rest."""
    u = np.array([1.0, 0.0, 0.0])
    v = np.array([0.0, np.sqrt(0.5), np.sqrt(0.5)])

    def at(t: float) -> pin.SE3:
        tau = min(max(t / duration, 0.0), 1.0)
        a = 2 * np.pi * (10 * tau**3 - 15 * tau**4 + 6 * tau**5)
        p = T_world_box0.translation + radius * ((np.cos(a) - 1.0) * u + np.sin(a) * v)
        return pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, yaw * np.sin(a)) @ T_world_box0.rotation, p)

    return at


@dataclass
class Carry:
    """What the run recorded, one row per control tick."""

    t: list = field(default_factory=list)
    command: list = field(default_factory=list)  # group q
    left: list = field(default_factory=list)  # T_world_left (achieved)
    right: list = field(default_factory=list)
    left_goal: list = field(default_factory=list)  # the path's hand poses at the tick's time
    right_goal: list = field(default_factory=list)
    modes: set = field(default_factory=set)


def carry_box(scene, config, settings, duration: float, goal_rate: float = 50.0, settle: float = 1.0,
              left: str = "left_hand", right: str = "right_hand") -> tuple[Carry, object]:
    """The ControlLoop of ``config`` (``settings``: its node section) carrying the box along
    :func:`box_path` from the SRDF's default pose; returns the recording and the loop."""
    from .core.control.control_loop import ControlLoop

    loop = ControlLoop(scene, config, settings)
    q = scene.named_configuration("default")
    g = loop.group.q_indices
    frames = loop.tasks[left].frame, loop.tasks[right].frame
    T_left0, T_right0 = (scene.frame_pose(q, f) for f in frames)
    T_world_box0 = pin.SE3(T_left0.rotation, 0.5 * (T_left0.translation + T_right0.translation))
    grasp = T_world_box0.inverse() * T_left0, T_world_box0.inverse() * T_right0  # T_box_hand
    path = box_path(T_world_box0, duration)
    rec = Carry()
    data = scene.model.createData()
    fids = [scene.frame_id(f) for f in frames]
    t, next_goal = 0.0, 0.0
    loop.state.incoming[:] = q
    loop.state.accept(t)
    if loop.activate(t):
        raise RuntimeError("the loop did not activate")
    while t < duration + settle:
        t += loop.dt
        T_box = path(t)
        if t >= next_goal:  # the goal stream (the node's ~/<task>/target_pose)
            loop.set_pose_goal(left, T_box * grasp[0])
            loop.set_pose_goal(right, T_box * grasp[1])
            next_goal += 1.0 / goal_rate
        loop.state.incoming[:] = q
        loop.state.accept(t)
        res = loop.tick(t)
        q[g] = res.command[g]
        rec.modes.add(loop.mode)
        pin.framesForwardKinematics(scene.model, data, q)
        rec.t.append(t)
        rec.command.append(q[g].copy())
        rec.left.append(data.oMf[fids[0]].copy())
        rec.right.append(data.oMf[fids[1]].copy())
        rec.left_goal.append(T_box * grasp[0])
        rec.right_goal.append(T_box * grasp[1])
    return rec, loop


def pose_errors(achieved, wanted) -> tuple[np.ndarray, np.ndarray]:
    """Per sample, |position error| [m] and |rotation error| [rad] of ``achieved`` against ``wanted``."""
    e = [pin.log6(W.inverse() * A) for A, W in zip(achieved, wanted)]
    return np.array([np.linalg.norm(x.linear) for x in e]), np.array([np.linalg.norm(x.angular) for x in e])


def grasp_errors(rec: Carry) -> tuple[np.ndarray, np.ndarray]:
    """The right hand's pose in the left hand's frame against the grasp at the start: [m], [rad]."""
    grasp = rec.left[0].inverse() * rec.right[0]
    return pose_errors([L.inverse() * R for L, R in zip(rec.left, rec.right)], [grasp] * len(rec.left))


def arm_pairs(scene) -> list[int]:
    """Indices of the collision pairs with one geometry on each arm (the gripper and fingers included)."""
    model, gm = scene.model, scene.collision_model
    roots = {side: model.getJointId(j) for side, j in ARM_ROOTS.items()}

    def side(joint: int) -> str:
        while joint > 0:
            for name, root in roots.items():
                if joint == root:
                    return name
            joint = model.parents[joint]
        return ""

    sides = [side(g.parentJoint) for g in gm.geometryObjects]
    return [k for k, p in enumerate(gm.collisionPairs) if {sides[p.first], sides[p.second]} == {"left", "right"}]


def closest_arm_distance(scene, group, commands: np.ndarray, every: int = 10) -> tuple[float, str]:
    """The least distance between the arms over every ``every``-th command [m], and its pair."""
    gm = scene.collision_model
    pairs = arm_pairs(scene)
    data, gd = scene.model.createData(), pin.GeometryData(gm)
    q = scene.named_configuration("default")
    best, which = np.inf, ""
    for c in commands[::every]:
        q[group.q_indices] = c
        pin.updateGeometryPlacements(scene.model, data, gm, gd, q)
        for k in pairs:
            d = pin.computeDistance(gm, gd, k).min_distance
            if d < best:
                p = gm.collisionPairs[k]
                best, which = d, f"{gm.geometryObjects[p.first].name} <-> {gm.geometryObjects[p.second].name}"
    return float(best), which


def run(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from .core.config import load_config
    from .core.model.robots import load_example_robot
    from .core.model.scene_config import scene_from_config
    from .node.node_config import load_node_config

    console = Console()
    config = load_config(args.config)
    if not args.grasp_task:  # the hands' own tasks alone keep the grasp
        config = dataclasses.replace(config, tasks=[t for t in config.tasks if t.type != "relative_frame"])
    rd = load_example_robot("baxter")
    scene = scene_from_config(rd.urdf_xml, rd.srdf_xml, config.robot, rd.package_paths, config.obstacles)
    console.print(f"Baxter, group {config.robot.group!r} ({scene.group(config.robot.group).nv} joints), tasks "
                  f"{', '.join(f'{t.name} ({t.type})' for t in config.tasks)}; {args.duration:g} s path, simulated at "
                  f"{load_node_config(config.node).control_rate_hz:g} Hz ...", markup=False, highlight=False)
    rec, loop = carry_box(scene, config, load_node_config(config.node), args.duration)
    dt, c = loop.dt, np.array(rec.command)
    accel = loop.acceleration_limit
    acc = float((np.abs(np.diff(c, n=2, axis=0)) / dt**2 / accel.a_max).max())
    jerk = float((np.abs(np.diff(c, n=3, axis=0)) / dt**3 / accel.j_max).max())
    g_pos, g_rot = grasp_errors(rec)
    l_pos, l_rot = pose_errors(rec.left, rec.left_goal)
    r_pos, r_rot = pose_errors(rec.right, rec.right_goal)
    d_arm, pair = closest_arm_distance(scene, loop.group, c)
    barrier = next(b for b in config.barriers if b.type == "collision" and b.pairs in ("self", "all"))

    def rms(x):
        return float(np.sqrt(np.mean(x**2)))

    t = Table(title="two arms in one QP: Baxter's hands carry a 0.4 m box (core ControlLoop, simulated robot)",
              title_justify="left", caption=f"grasp: the right hand's pose in the left hand's frame against the grasp "
              f"(held: < {GRASP_LIMITS[0] * 1e3:g} mm, {np.rad2deg(GRASP_LIMITS[1]):g} deg); tracking: each hand against "
              "the path at the same time (the goal smoothing's lag included); ratios: every joint, from consecutive "
              "commands (<= 1)", caption_justify="left")
    t.add_column("metric")
    t.add_column("max", justify="right")
    t.add_column("rms", justify="right")
    t.add_row("grasp error, position", f"{g_pos.max() * 1e3:.2f} mm", f"{rms(g_pos) * 1e3:.2f} mm")
    t.add_row("grasp error, rotation", f"{np.rad2deg(g_rot.max()):.3f} deg", f"{np.rad2deg(rms(g_rot)):.3f} deg")
    for name, (p, r) in (("left hand", (l_pos, l_rot)), ("right hand", (r_pos, r_rot))):
        t.add_row(f"{name} tracking, position", f"{p.max() * 1e3:.2f} mm", f"{rms(p) * 1e3:.2f} mm")
        t.add_row(f"{name} tracking, rotation", f"{np.rad2deg(r.max()):.3f} deg", f"{np.rad2deg(rms(r)):.3f} deg")
    t.add_row("peak acceleration / a_max", f"{acc:.3f}", "")
    t.add_row("peak jerk / j_max", f"{jerk:.3f}", "")
    t.add_row(f"closest arm-arm distance (d_min {barrier.d_min * 1e3:g} mm)", f"min {d_arm * 1e3:.1f} mm", "",
              end_section=True)
    t.add_row("QP failures / holds", f"{loop.counts.qp_failures} / {loop.counts.holds}", "")
    console.print(t)
    console.print(f"closest arm-arm pair: {pair}", markup=False, highlight=False)
    out = plot(rec, g_pos, args.out)
    console.print(f"plot: {out}")
    good = (g_pos.max() < GRASP_LIMITS[0] and g_rot.max() < GRASP_LIMITS[1] and acc <= 1.0 + 1e-6
            and jerk <= 1.0 + 1e-6 and d_arm >= barrier.d_min - 1e-3 and loop.counts.qp_failures == 0)
    console.print(f"dual-arm carry: {'ok' if good else 'FAILED'}")
    return 0 if good else 1


def plot(rec: Carry, g_pos: np.ndarray, out: str) -> Path:
    """Top (x-y) and side (x-z) views of each hand's and the box's goals vs achieved; the grasp error."""
    plt = pyplot()
    fig, (top, side, err) = plt.subplots(1, 3, figsize=(16, 5))
    left, right = (np.array([T.translation for T in x]) for x in (rec.left, rec.right))
    left_goal, right_goal = (np.array([T.translation for T in x]) for x in (rec.left_goal, rec.right_goal))
    for ax, (i, j), view in ((top, (0, 1), "top view (x-y)"), (side, (0, 2), "side view (x-z)")):
        for name, p, goal, color in (("left hand", left, left_goal, "tab:blue"),
                                     ("right hand", right, right_goal, "tab:green"),
                                     ("box centre", 0.5 * (left + right), 0.5 * (left_goal + right_goal), "tab:orange")):
            ax.plot(goal[:, i], goal[:, j], "--", color="tab:gray", lw=1)
            ax.plot(p[:, i], p[:, j], color=color, label=name)
        k = len(left) // 3  # the box (hand to hand) at a third of the path
        ax.plot([left[k, i], right[k, i]], [left[k, j], right[k, j]], color="tab:orange", lw=4, alpha=0.4)
        ax.set_xlabel("x [m]")
        ax.set_ylabel("y [m]" if j == 1 else "z [m]")
        ax.set_aspect("equal")
        ax.set_title(f"{view}: goals (dashed) vs achieved")
        ax.legend(fontsize=8)
    err.plot(np.array(rec.t), g_pos * 1e3, color="tab:red")
    err.set_xlabel("time [s]")
    err.set_ylabel("grasp position error [mm]")
    err.set_title(f"grasp error: max {g_pos.max() * 1e3:.2f} mm")
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path
