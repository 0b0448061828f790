"""The demo's scenarios: the goal around a vertical circle through the workspace box's upper face, a twist
stream into that face (teleop), a reach over a block on the table and a sweep toward a box only the mock
camera's cloud shows; what each puts on the node's topics, and the time window it records."""

from __future__ import annotations

import time

import numpy as np


def circle_path(start: np.ndarray, p_max_z: float, radius: float, lead_in: float, period: float):
    """Goal position at time t: lead-in from ``start`` to the circle's bottom, then around a vertical
    circle in the y-z plane whose top is 5 cm above ``p_max_z``."""
    center = np.array([start[0], start[1], p_max_z + 0.05 - radius])
    bottom = center - [0.0, 0.0, radius]

    def at(t: float) -> np.ndarray:
        if t < lead_in:
            s = 0.5 - 0.5 * np.cos(np.pi * t / lead_in)
            return start + s * (bottom - start)
        a = 2 * np.pi * (t - lead_in) / period
        return center + radius * np.array([0.0, np.sin(a), -np.cos(a)])

    return at


def teleop_into_the_box(node, ns, rec, progress, t_origin, push: float = 4.0) -> None:
    """A SpaceMouse held up: a 100 Hz TwistStamped (unitless 1.0 x max_linear_speed along the base's z)
    for ``push`` seconds, into the box's upper face (it stops there: the status says which barrier),
    then nothing: the stream times out and the arm brakes to rest."""
    from geometry_msgs.msg import TwistStamped

    pub = node.create_publisher(TwistStamped, f"/{ns}/ee/target_twist", 10)
    deadline = time.monotonic() + 10.0
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    msg = TwistStamped()
    msg.header.frame_id = ""
    msg.twist.linear.z = 1.0
    task = progress.add_task("teleop: a twist stream pushing into the box's upper face", total=push + 1.0)
    t_start = time.perf_counter()
    rec.teleop_window = (t_start - t_origin,)
    next_t = 0.0
    while (t := time.perf_counter() - t_start) < push + 1.0:
        if t < push:
            msg.header.stamp = node.get_clock().now().to_msg()
            pub.publish(msg)
        progress.update(task, completed=t)
        next_t += 0.01
        time.sleep(max(0.0, next_t - (time.perf_counter() - t_start)))
    rec.teleop_window = (rec.teleop_window[0], time.perf_counter() - t_origin)
    node.destroy_publisher(pub)


# ------------------------------------------------------------------ reach over an obstacle
#: the block put on the table for the reach (world frame, centred on its pose) [m]
BLOCK_SIZE = (0.12, 0.12, 0.31)
BLOCK_TOP = 0.30


def block_obstacle(T0):
    """The block (a core Obstacle) under the TCP's start x, on the table (top face at BLOCK_TOP)."""
    from ..core.model.obstacles import Obstacle

    return Obstacle("block", "box", BLOCK_SIZE, position=(float(T0.translation[0]), 0.0, BLOCK_TOP - BLOCK_SIZE[2] / 2))


def reach_over_block(node, ns, goal_pub, T0, rec, progress, t_origin, duration: float = 5.0) -> None:
    """Add a block on the table (CollisionObject on ~/collision_objects, shown on ~/markers), then
    stream a goal from one side of it to the other along an arc that dips 1 cm under the block's
    top (the obstacle barrier keeps the hand d_min above it), and back."""
    import pinocchio as pin
    from geometry_msgs.msg import PoseStamped
    from shape_msgs.msg import SolidPrimitive

    from roboplan_ik_interfaces.msg import CollisionObject

    from ..node.message_conversions import pose_from_se3

    pub = node.create_publisher(CollisionObject, f"/{ns}/collision_objects", 10)
    deadline = time.monotonic() + 10.0
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    block = rec.block = block_obstacle(T0)
    msg = CollisionObject(id=block.name, operation=CollisionObject.ADD)
    msg.header.frame_id = ""
    pose_from_se3(block.T_frame_obstacle, msg.pose)
    msg.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=list(BLOCK_SIZE))]
    msg.primitive_poses = [pose_from_se3(pin.SE3.Identity())]
    pub.publish(msg)
    x = float(T0.translation[0])
    side, z_side, z_dip = 0.25, BLOCK_TOP + 0.06, BLOCK_TOP - 0.01  # the goal dips 1 cm into the block

    def at(s: float) -> np.ndarray:  # s in [0, 1]: +side -> -side over the block -> +side
        u = 1.0 - abs(2.0 * s - 1.0)  # 0 -> 1 -> 0: there and back
        y = side * np.cos(np.pi * u)
        z = z_side + (z_dip - z_side) * np.sin(np.pi * u) ** 2
        return np.array([x, y, z])

    task = progress.add_task("reaching over a block on the table", total=duration + 2.0)
    t_start = time.perf_counter()
    rec.obstacle_window = (t_start - t_origin,)
    while (t := time.perf_counter() - t_start) < duration + 2.0:
        s = min(max(t - 1.0, 0.0) / duration, 1.0)  # 1 s at the start side, the reach, 1 s back at it
        ps = PoseStamped()
        pose_from_se3(pin.SE3(T0.rotation, at(s)), ps.pose)
        goal_pub.publish(ps)
        rec.goal_t.append(time.perf_counter() - t_origin)
        rec.goal_p.append(at(s))
        progress.update(task, completed=t)
        time.sleep(0.02)
    rec.obstacle_window = (rec.obstacle_window[0], time.perf_counter() - t_origin)
    node.destroy_publisher(pub)


# --------------------------------------------------------- a box that appears in the camera's cloud
#: the box the mock camera shows on request (world frame, on the table under the TCP's start x) [m]
PERCEIVED_BOX_SIZE = (0.12, 0.12, 0.40)
PERCEIVED_SWEEP = (0.35, -0.35, 0.30)  # the goal's y from, y to, and z [m]: straight through the box


def perceived_box(T0):
    """The camera's box (a core Obstacle, for the demo's own distances): on the table, under the start TCP."""
    from ..core.model.obstacles import Obstacle

    # its +y face (the side the arm comes from) at y = 0.07, mid-leaf of a 2 cm octree: a face on a leaf
    # boundary jumps by a leaf between noisy clouds (README, "Perceived obstacles")
    return Obstacle("camera_box", "box", PERCEIVED_BOX_SIZE,
                    position=(float(T0.translation[0]), 0.01, PERCEIVED_BOX_SIZE[2] / 2))


def _set_camera_box(node, visible: bool) -> None:
    """mock_camera's runtime parameter box_visible (SetParameters: any rclpy version)."""
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    client = node.create_client(SetParameters, "/mock_camera/set_parameters")
    try:
        if not client.wait_for_service(timeout_sec=10.0):
            raise RuntimeError("mock_camera's parameter service did not appear within 10 s")
        value = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=visible)
        future = client.call_async(SetParameters.Request(parameters=[Parameter(name="box_visible", value=value)]))
        deadline = time.monotonic() + 10.0
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not (future.done() and future.result().results[0].successful):
            raise RuntimeError(f"mock_camera refused box_visible := {visible}")
    finally:
        node.destroy_client(client)


def sweep_toward_perceived_box(node, ns, goal_pub, T0, rec, progress, t_origin, sweep: float = 3.0,
                               hold: float = 1.5) -> None:
    """The goal to one side of where the box will be; the camera shows the box (only its cloud knows it);
    then the goal sweeps straight through it to the other side, stays, and comes back. The arm stops in
    front of the box (the ``pairs: perceived`` barrier) and returns. The box is hidden again after."""
    import pinocchio as pin
    from geometry_msgs.msg import PoseStamped

    from ..node.message_conversions import pose_from_se3

    x = float(T0.translation[0])
    y_from, y_to, z = PERCEIVED_SWEEP

    def publish(y: float) -> None:
        p = np.array([x, y, z])
        ps = PoseStamped()
        pose_from_se3(pin.SE3(T0.rotation, p), ps.pose)
        goal_pub.publish(ps)
        rec.goal_t.append(time.perf_counter() - t_origin)
        rec.goal_p.append(p)

    def points() -> int:
        return rec.perceived_status[-1][2] if rec.perceived_status else 0

    task = progress.add_task("a box appears in the camera's cloud on the arm's path", total=2 * sweep + hold + 2.0)
    t_start = time.perf_counter()
    while time.perf_counter() - t_start < 2.0:  # to the start side
        publish(y_from)
        progress.update(task, completed=time.perf_counter() - t_start)
        time.sleep(0.02)
    before = points()
    _set_camera_box(node, True)
    deadline = time.monotonic() + 10.0
    while points() < before + 50 and time.monotonic() < deadline:  # the box is in the node's cloud
        publish(y_from)
        time.sleep(0.02)
    if points() < before + 50:
        raise RuntimeError(f"the camera's box did not reach the node's cloud within 10 s ({points()} points)")
    t0 = time.perf_counter()
    rec.perceived_window = (t0 - t_origin,)
    while (t := time.perf_counter() - t0) < 2 * sweep + hold:
        s = min(t / sweep, 1.0) if t < sweep + hold else max(0.0, 1.0 - (t - sweep - hold) / sweep)
        publish(y_from + (y_to - y_from) * (0.5 - 0.5 * np.cos(np.pi * s)))
        progress.update(task, completed=2.0 + t)
        time.sleep(0.02)
    deadline = time.perf_counter() + 1.0
    while time.perf_counter() < deadline:  # settle at the start side
        publish(y_from)
        time.sleep(0.02)
    rec.perceived_window = (rec.perceived_window[0], time.perf_counter() - t_origin)
    _set_camera_box(node, False)
    deadline = time.monotonic() + 5.0
    while points() >= before + 50 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.6)  # one more /diagnostics message
