"""Demo: the ik_controller node driving the mock Panda along a path that leaves the workspace box,
then reaching over a block put on the table at run time.

    python -m roboplan_ik_ros.demo            (what `make demo` runs; about 30 s)

Starts ``mock_robot`` (as a strict drive: it refuses any command beyond the acceleration and jerk
bounds of the config's joint_limits_file, as a Franka would) and ``ik_controller`` (autostart) as
child processes with this interpreter, streams a pose goal around a vertical circle whose top
crosses the upper face of the workspace barrier box, calls ``~/solve_ik`` a few times meanwhile,
stops the controller with SIGINT while the arm moves (it brakes to rest), then prints a table
(achieved rate, tick time, tracking error, smallest barrier margin, service success and latency),
the peak acceleration and jerk per joint and segment as ratios of the bounds, and saves a plot
(target vs achieved TCP path; joints vs limits). Before the stop (unless --no-obstacle-segment)
it adds a block on the table over ``~/collision_objects`` (an RViz marker on ``~/markers``) and
streams a goal over it and back that dips into it: a second table and plot give the smallest
obstacle distance (from /joint_states, raw meshes) against d_min. Before that (skip it with
--no-perceived-segment) a mock depth camera (``mock_camera``, started with the others: the table and the
arm at 15 Hz on ``~/pointcloud``) shows a box on the arm's path, and the goal sweeps straight through
it: the ``pairs: perceived`` barrier stops the arm in front of it (a table and a plot: the distance to
the true box against d_min, QP failures, acceleration and jerk). Then (unless --no-teleop-segment) a
teleop segment: a scripted 100 Hz twist stream on ``~/ee/target_twist`` pushes the tool up into the
box's upper face and holds it there, then stops; the line printed gives the highest TCP point against
the face and the ``~/status`` motion limits seen (barrier, then command_timeout). A strict-drive fault
fails the demo loudly. Exit status 0 when everything checked out.
"""

from __future__ import annotations

import argparse
import sys

# the demo's parts (the package's own names, as when it was one module; bench/ imports circle_path)
from .processes import Child, default_config, ros_environment
from .recording import Recording
from .reports import motion_table, obstacle_report, perceived_report, report, teleop_report
from .runner import run
from .scenarios import (BLOCK_SIZE, BLOCK_TOP, PERCEIVED_BOX_SIZE, PERCEIVED_SWEEP, block_obstacle, circle_path,
                        perceived_box, reach_over_block, sweep_toward_perceived_box, teleop_into_the_box)

__all__ = [
    "BLOCK_SIZE", "BLOCK_TOP", "PERCEIVED_BOX_SIZE", "PERCEIVED_SWEEP", "Child", "Recording", "block_obstacle",
    "circle_path", "default_config", "main", "motion_table", "obstacle_report", "perceived_box", "perceived_report",
    "reach_over_block", "report", "ros_environment", "run", "sweep_toward_perceived_box", "teleop_into_the_box",
    "teleop_report",
]


def main(argv=None) -> int:
    # prog: `python -m roboplan_ik_ros.demo` would show __main__.py; the console script's name otherwise
    prog = "python -m roboplan_ik_ros.demo" if sys.argv[0].endswith("__main__.py") else None
    p = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dual-arm", action="store_true",
                   help="the dual-arm demo instead: Baxter's hands carry a box in one QP (demo_dual_arm.py; no ROS)")
    p.add_argument("--config", default=None,
                   help="YAML config (default: the packaged panda.yaml; baxter_dual.yaml with --dual-arm)")
    p.add_argument("--duration", type=float, default=10.0, help="--dual-arm: seconds along the box's path")
    p.add_argument("--no-grasp-task", dest="grasp_task", action="store_false",
                   help="--dual-arm: without the config's relative_frame (grasp) task: the hands' tasks alone")
    p.add_argument("--loops", type=int, default=2, help="laps around the circle")
    p.add_argument("--period", type=float, default=8.0, help="seconds per lap")
    p.add_argument("--radius", type=float, default=0.2, help="circle radius [m]")
    p.add_argument("--goal-rate", type=float, default=50.0, help="goal stream rate [Hz]")
    p.add_argument("--service-calls", type=int, default=5)
    p.add_argument("--out", default=None,
                   help="plot file (PNG; default build/demo/roboplan_ik_demo.png, roboplan_ik_dual_arm.png)")
    p.add_argument("--no-obstacle-segment", dest="obstacle_segment", action="store_false",
                   help="skip the reach over a block on the table (added on ~/collision_objects)")
    p.add_argument("--no-perceived-segment", dest="perceived_segment", action="store_false",
                   help="skip the mock depth camera and the sweep toward a box that appears in its cloud")
    p.add_argument("--no-teleop-segment", dest="teleop_segment", action="store_false",
                   help="skip the twist stream that pushes into the box's upper face")
    args = p.parse_args(argv)
    if args.dual_arm:
        from .. import demo_dual_arm

        args.config = args.config or demo_dual_arm.default_config()
        args.out = args.out or "build/demo/roboplan_ik_dual_arm.png"
        return demo_dual_arm.run(args)
    args.config = args.config or default_config()
    args.out = args.out or "build/demo/roboplan_ik_demo.png"
    return run(args)
