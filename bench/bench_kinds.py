"""Per-kind step time against pink's equivalent, same run, daqp for both.

Scenario (Panda, group arm, dt = 0.01 s): the hand tracks a 10 cm circle (period 4 s) with a frame task
(position and orientation cost 1), limits position + velocity, plus ONE kind under test; the peer is pink
4.4 with its FrameTask, ConfigurationLimit, VelocityLimit and its equivalent task or barrier, solve_ik
with daqp. Every solver steps its own configuration; ``--steps`` steps per kind, interleaved round-robin
(so a slow minute hits both), hot (no pause between steps). Printed: median and p99 step [us] and the
ratio ours / pink of the medians, against the issue's target (<= 0.5x). A kind without a pink equivalent
is timed alone (no ratio); a kind that is not registered in this build is skipped with a note.

pink's weights: its tasks minimise ||cost * e||^2 (ours: sqrt_weight^2 = cost): a pink cost c matches ours
c^2 where the kinds use pink's convention of weights; the step times do not depend on the values.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "roboplan_ik_ros"))
sys.path.insert(0, str(REPO / "bench"))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from roboplan_ik_ros.core.config import load_config  # noqa: E402
from roboplan_ik_ros.core.model.robots import load_example_robot  # noqa: E402
from roboplan_ik_ros.core.model.scene_config import scene_from_config  # noqa: E402
from roboplan_ik_ros.core.oink.controller import OinkController  # noqa: E402
from roboplan_ik_ros.core.oink.kind import kinds  # noqa: E402

HAND, DT, TARGET_RATIO = "panda_hand_tcp", 0.01, 0.5

# kind -> (section, our YAML entry, pink factory (model, conf, q) -> (tasks, barriers) or None)
def _pink_cases():
    from pink import barriers, tasks

    def relative(model, conf, q):
        t = tasks.RelativeFrameTask(HAND, "panda_link3", position_cost=1.0, orientation_cost=1.0)
        t.set_target_from_configuration(conf)
        return [t], []

    def com(model, conf, q):
        t = tasks.ComTask(cost=1.0)
        t.set_target_from_configuration(conf)
        return [t], []

    def low_acceleration(model, conf, q):
        t = tasks.LowAccelerationTask(cost=0.1)
        t.set_last_integration(np.zeros(model.nv), DT)
        return [t], []

    def joint_velocity(model, conf, q):
        t = tasks.JointVelocityTask(cost=0.1)
        t.set_target(np.zeros(model.nv), DT)
        return [t], []

    return {
        "(frame task only)": ("tasks", None, lambda m, c, q: ([], [])),  # the reference row
        "relative_frame": ("tasks", {"type": "relative_frame", "frame": HAND, "reference": "panda_link3",
                                     "priority": 2}, relative),
        "com": ("tasks", {"type": "com", "cost": 1.0, "priority": 2}, com),
        "damping": ("tasks", {"type": "damping", "cost": 0.1, "priority": 2},
                    lambda m, c, q: ([tasks.DampingTask(cost=0.1)], [])),
        "low_acceleration": ("tasks", {"type": "low_acceleration", "cost": 0.1, "priority": 2}, low_acceleration),
        "joint_velocity": ("tasks", {"type": "joint_velocity", "cost": 0.1, "priority": 2}, joint_velocity),
        "manipulability": ("tasks", {"type": "manipulability", "frame": HAND, "cost": 0.1, "priority": 2},
                           lambda m, c, q: ([tasks.ManipulabilityTask(HAND, m, cost=0.1)], [])),
        "joint": ("tasks", {"type": "joint", "joints": ["panda_joint1"], "priority": 2}, None),
        "look_at": ("tasks", {"type": "look_at", "frame": HAND, "priority": 2}, None),
        "sphere": ("barriers", {"type": "sphere", "frame": HAND, "center": [0.0, 0.0, 0.333], "radius": 0.95,
                                "inside": True},
                   lambda m, c, q: ([], [barriers.BodySphericalBarrier((HAND, "panda_link0"), d_min=0.1,
                                                                       safe_displacement_gain=0.0)])),
        "joint_limit": ("barriers", {"type": "joint_limit"}, None),
    }


class Ours:
    def __init__(self, section: str, entry: dict, robot) -> None:
        config = {"robot": {"group": "arm"}, "solver": {"qp_solver": "daqp"},
                  "tasks": [{"name": "ee", "type": "frame", "frame": HAND}],
                  "limits": [{"type": "position"}, {"type": "velocity"}]}
        if entry is not None:
            config.setdefault(section, []).append({**entry, "name": "kind"} if section != "limits" else entry)
        cfg = load_config(config)
        self.scene = scene_from_config(robot.urdf_xml, robot.srdf_xml, cfg.robot, robot.package_paths)
        self.q = self.scene.named_configuration("default")
        self.ctrl = OinkController(self.scene, cfg, DT, self.q)
        self.ee = self.ctrl.tasks["ee"]
        self.failures = 0

    def step(self, T: pin.SE3) -> float:
        self.ee.set_target(T)
        t0 = time.perf_counter()
        out = self.ctrl.step(self.q)
        dt = time.perf_counter() - t0
        self.failures += not out.result.ok
        self.q = out.q_next
        return dt


class Pink:
    def __init__(self, factory, robot, q0) -> None:
        import pink
        from pink import limits, tasks

        self.pink = pink
        model = pin.buildModelFromXML(robot.urdf_xml)
        arm = [model.getJointId(f"panda_joint{i}") for i in range(1, 8)]
        locked = [j for j in range(1, model.njoints) if j not in arm]
        self.model = pin.buildReducedModel(model, locked, q0) if locked else model
        self.q = q0[: self.model.nq].copy()
        self.conf = pink.Configuration(self.model, self.model.createData(), self.q)
        self.ee = tasks.FrameTask(HAND, position_cost=1.0, orientation_cost=1.0)
        extra_tasks, self.barriers = factory(self.model, self.conf, self.q)
        self.tasks = [self.ee, *extra_tasks]
        self.limits = [limits.ConfigurationLimit(self.model, config_limit_gain=1.0), limits.VelocityLimit(self.model)]
        self.failures = 0
        warnings.filterwarnings("ignore", module="qpsolvers")

    def step(self, T: pin.SE3) -> float:
        self.ee.set_target(T)
        t0 = time.perf_counter()
        self.conf.update(self.q)
        try:
            v = self.pink.solve_ik(self.conf, self.tasks, DT, solver="daqp", damping=1e-6, limits=self.limits,
                                   barriers=self.barriers or None, safety_break=False)
        except Exception:  # NoSolutionFound
            v = np.zeros(self.model.nv)
            self.failures += 1
        dt = time.perf_counter() - t0
        self.q = pin.integrate(self.model, self.q, v * DT)
        return dt


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--kinds", default="", help="comma-separated kinds (default: every case below)")
    args = p.parse_args()
    console = Console(width=150)
    robot = load_example_robot("panda")
    try:
        cases = _pink_cases()
        have_pink = True
    except ImportError as exc:
        console.print(f"pink not installed ({exc}): ours only")
        have_pink, cases = False, {}
    wanted = [k for k in args.kinds.split(",") if k] or list(cases)
    table = Table(title=f"Kinds: step time, ours vs pink (daqp), Panda, {args.steps} steps, same run")
    for col in ("kind", "ours median µs", "ours p99 µs", "pink median µs", "pink p99 µs", "ratio", "target",
                "failures ours/pink"):
        table.add_column(col, justify="right" if col != "kind" else "left")
    for name in wanted:
        section, entry, factory = cases[name]
        if entry is not None and entry["type"] not in kinds(section):
            console.print(f"[skip] {name}: not a registered {section[:-1]} kind in this build")
            continue
        ours = Ours(section, entry, robot)
        peer = Pink(factory, robot, ours.q) if factory is not None and have_pink else None
        T0 = ours.scene.frame_pose(ours.q, HAND)
        t_ours, t_pink = [], []
        for k in range(args.steps):
            th = 2 * np.pi * k * DT / 4.0
            T = pin.SE3(T0.rotation, T0.translation + 0.1 * np.array([0.0, np.cos(th) - 1.0, np.sin(th)]))
            t_ours.append(ours.step(T))
            if peer is not None:
                t_pink.append(peer.step(T))
        mo, po = np.median(t_ours) * 1e6, np.percentile(t_ours, 99) * 1e6
        if peer is not None:
            mp, pp = np.median(t_pink) * 1e6, np.percentile(t_pink, 99) * 1e6
            ratio = mo / mp
            table.add_row(name, f"{mo:.1f}", f"{po:.1f}", f"{mp:.1f}", f"{pp:.1f}", f"{ratio:.3f}x",
                          "PASS" if ratio <= TARGET_RATIO else "MISS", f"{ours.failures}/{peer.failures}")
        else:
            table.add_row(name, f"{mo:.1f}", f"{po:.1f}", "-", "-", "-", "(no pink equivalent)", f"{ours.failures}/-")
    console.print(table)
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"] * 3
    console.print(f"machine: load average {' / '.join(load)} (1/5/15 min); ratios are within this run only")


if __name__ == "__main__":
    main()
