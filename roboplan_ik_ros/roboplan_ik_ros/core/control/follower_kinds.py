"""The followers the control loop gives the tasks' goals, and the goal inputs each accepts.

A task kind names its follower in its class's ``follower`` (:class:`~..oink.tasks.task.Task`); the loop builds the
follower from that name (:meth:`~.loop_goals.LoopGoals._build_followers`) and the node subscribes each task's
inputs from it (node/goal_inputs.py): a new kind that takes a known goal kind is one class attribute.

==================  =======================  ==========================================================================
follower            goal inputs              how a goal reaches the target, and what it asks of the kind
==================  =======================  ==========================================================================
``frame_pose``      ``pose``, ``twist``      a world pose, smoothed (node.goal_smoothing); twist streams of the frame
                                             (node.streaming). The task has ``frame``, ``frame_id``, a pin.SE3
                                             ``target`` in the world and a 6-row ``sqrt_weight`` (position first).
``relative_pose``   ``target``               a pose in ``goal_frame``, smoothed as a frame pose; leashed to
                                             ``relative_pose(data)`` (the task has ``frame_id``, ``reference_id``).
``posture``         ``joints``,              the group's q, shaped jerk-limited (target_shaper.py); joint jog streams.
                    ``joint_jog``
``joint_positions`` ``target``               the group's q, shaped jerk-limited, within the entry's ``target_leash``.
``point``           ``target``               a world point, moved along a straight line jerk-limited within
                                             ``target_leash`` of :meth:`~..oink.tasks.task.Task.leash_point`.
``line_of_sight``   ``target``               a world point, the line of sight from the task's frame (``frame_id``)
                                             turned to it jerk-limited, within ``target_leash`` [rad] of the
                                             direction to :meth:`~..oink.tasks.task.Task.leash_point`.
``velocities``      ``target``               the group's v, set as it arrives; a stream zeroed after
                                             streaming.command_timeout without a newer one.
==================  =======================  ==========================================================================

A joint goal's speed, acceleration and jerk, and a point goal's, come from the task's config entry
(``max_target_speed``, ``max_turn_speed``, ...: the kind's keys).
"""

from __future__ import annotations

# The goal inputs: the ControlLoop method each arrives on (the node's topics: node/goal_inputs.py).
POSE = "pose"  # set_pose_goal: a pin.SE3 in the world frame (~/<task>/target_pose)
TWIST = "twist"  # set_twist: a twist of the task's frame (~/<task>/target_twist)
JOINTS = "joints"  # set_joint_goal: the group's q (~/<task>/target_joints: joints not named keep their goal)
JOINT_JOG = "joint_jog"  # set_joint_velocities: a joint jog (~/<task>/target_joint_velocities, ~/<task>/joint_jog)
TARGET = "target"  # set_task_target: the target as is, in the form the kind's Task.goal names ("pose" in its
#                    goal_frame, "point", "joints", "velocities"; the node's topic follows the form)

FOLLOWER_INPUTS: dict[str, tuple[str, ...]] = {
    "frame_pose": (POSE, TWIST),
    "relative_pose": (TARGET,),
    "posture": (JOINTS, JOINT_JOG),
    "joint_positions": (TARGET,),
    "point": (TARGET,),
    "line_of_sight": (TARGET,),
    "velocities": (TARGET,),
}


def goal_inputs(task) -> tuple[str, ...]:
    """The goal inputs ``task`` accepts, by its kind's follower (() for a kind without one); ValueError for a
    follower name this table does not know, or a ``target`` input without the form of its goal (Task.goal)."""
    if not task.follower:
        return ()
    inputs = FOLLOWER_INPUTS.get(task.follower)
    if inputs is None:
        raise ValueError(f"task {task.name!r} ({type(task).__name__}): unknown follower {task.follower!r}; "
                         f"known: {', '.join(FOLLOWER_INPUTS)}")
    if TARGET in inputs and not task.goal:
        raise ValueError(f"task {task.name!r} ({type(task).__name__}): follower {task.follower!r} takes its goals "
                         "as targets, but the kind names no goal form (Task.goal)")
    return inputs
