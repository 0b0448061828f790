"""``mock_camera``: a fixed depth camera for demos and tests, beside ``mock_robot``.

Publishes sensor_msgs/PointCloud2 on ``topic`` at ``rate_hz``: what a camera at ``camera_position``
looking at ``camera_target`` sees of a table, a box and the robot itself (at the latest
``/joint_states``), ray cast with numpy (:class:`~roboplan_ik_ros.core.model.depth_camera.DepthCamera`),
with Gaussian depth noise. The cloud is organized (``height`` x ``width`` ~ ``points``), NaN where a
ray hits nothing (``is_dense: false``, as a depth camera's), x/y/z float32 in ``frame_id`` (the world:
the robot's root). The arm is in the cloud: the controller's self-filter must remove it.

Parameters (read-only unless marked runtime):

``robot`` (``panda``), ``srdf``
    As ``mock_robot``'s: an example robot or a URDF path (collision geometry: convex hulls).
``rate_hz`` (15.0), ``points`` (20000), ``fov_deg`` (50.0), ``noise`` (0.002)
    Clouds per second; pixels (4:3); horizontal field of view [deg]; depth noise sigma [m].
``camera_position`` ([1.4, -0.6, 1.3]), ``camera_target`` ([0.3, 0.0, 0.15])
    [m] world frame.
``table_size`` ([1.2, 1.2, 0.04]), ``table_position`` ([0.35, 0.0, -0.03])
    [m] the box under the robot (panda.yaml's table); ``table_size: []`` = no table.
``box_size`` ([0.12, 0.12, 0.36]), ``box_position`` ([0.45, 0.0, 0.18])
    [m] the box's size and centre.
``box_appear_after`` (-1.0)
    [s] after the node started, the box appears (``box_visible`` becomes true); < 0: not by itself.
``box_visible`` (false, runtime)
    Whether the box is in the cloud now.
``topic`` (``/ik_controller/pointcloud``), ``frame_id`` (``world``), ``joint_states_topic`` (``/joint_states``),
``seed`` (0)
"""

from __future__ import annotations

import math
import time

import numpy as np
import pinocchio as pin
import rclpy
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState, PointCloud2

from ..core.errors import InvalidInputError
from ..core.model.depth_camera import CameraBox, DepthCamera, image_size, look_at
from ..core.model.robots import EXAMPLE_ROBOTS
from ..core.model.scene import Scene
from ..node.message_conversions import JointMap, xyz_cloud
from ..node.spin import spin_node_until_shutdown
from .mock_robot import load_robot


def _vector(value, name: str, n: int = 3, allow_empty: bool = False) -> np.ndarray:
    v = np.array([float(x) for x in value]) if len(value) else np.zeros(0)
    if (allow_empty and len(v) == 0) or (len(v) == n and np.isfinite(v).all()):
        return v
    raise InvalidInputError(f"{name}: expected {n} finite numbers{' or []' if allow_empty else ''}, got {list(value)}")


def cloud_message(points: np.ndarray, width: int, height: int, frame_id: str) -> PointCloud2:
    """An organized x/y/z float32 cloud of (height * width, 3) points (NaN: no return)."""
    return xyz_cloud(points, width, height, frame_id, is_dense=False)


class MockCamera(Node):
    def __init__(self, node_name: str = "mock_camera", **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        d = ParameterDescriptor

        def ro(name, default, text):
            return self.declare_parameter(name, default, d(description=text, read_only=True)).value

        robot = ro("robot", "panda", f"example robot ({', '.join(EXAMPLE_ROBOTS)}) or a URDF file path")
        srdf_path = ro("srdf", "", "SRDF file (with a URDF path)")
        rate = ro("rate_hz", 15.0, "clouds per second [Hz]")
        points = ro("points", 20000, "pixels per cloud (width x height, 4:3)")
        fov = ro("fov_deg", 50.0, "horizontal field of view [deg]")
        noise = ro("noise", 0.002, "depth noise sigma along the ray [m]")
        position = _vector(ro("camera_position", [1.4, -0.6, 1.3], "[m] world frame"), "camera_position")
        target = _vector(ro("camera_target", [0.3, 0.0, 0.15], "[m] world frame"), "camera_target")
        table_size = _vector(ro("table_size", [1.2, 1.2, 0.04], "[m]; [] = no table"), "table_size",
                             allow_empty=True)
        table_position = _vector(ro("table_position", [0.35, 0.0, -0.03], "[m] centre"), "table_position")
        box_size = _vector(ro("box_size", [0.12, 0.12, 0.36], "[m]"), "box_size")
        box_position = _vector(ro("box_position", [0.45, 0.0, 0.18], "[m] centre"), "box_position")
        self.box_appear_after = ro("box_appear_after", -1.0, "[s] after start the box appears; < 0: not by itself")
        self.declare_parameter("box_visible", False, d(description="the box is in the cloud (runtime)"))
        topic = ro("topic", "/ik_controller/pointcloud", "PointCloud2 topic")
        self.frame_id = ro("frame_id", "world", "the cloud's frame (the world: the robot's root)")
        js_topic = ro("joint_states_topic", "/joint_states", "the robot's joint states")
        seed = ro("seed", 0, "noise seed")
        if not (rate > 0.0 and 0.0 < fov < 180.0 and noise >= 0.0):
            raise InvalidInputError(f"rate_hz {rate} > 0, fov_deg {fov} in (0, 180), noise {noise} >= 0 expected")
        if (box_size <= 0).any() or (len(table_size) and (table_size <= 0).any()):
            raise InvalidInputError("table_size, box_size: expected sizes > 0")
        self.add_on_set_parameters_callback(self._on_set)

        urdf, srdf, pkgs, _ = load_robot(robot, srdf_path)
        self.scene = Scene(urdf, srdf, pkgs)
        self.width, self.height = image_size(int(points))
        self.camera = DepthCamera(self.scene, look_at(position, target), self.width, self.height,
                                  math.radians(fov), float(noise), int(seed))
        self._table = ([CameraBox(pin.SE3(np.eye(3), table_position), table_size / 2)] if len(table_size) else [])
        self._box = CameraBox(pin.SE3(np.eye(3), box_position), box_size / 2)
        self._box_shown = None  # what set_boxes last cast
        self._state = JointMap(self.scene, list(self.scene.joint_names))
        self._q = None  # the latest /joint_states (None: not yet: the robot is not drawn)
        self._t_start = time.monotonic()
        self.clouds = 0
        self.render_ms = 0.0
        self._pub = self.create_publisher(PointCloud2, topic, qos_profile_sensor_data)
        self.create_subscription(JointState, js_topic, self._on_joint_states, 10)
        self.create_timer(1.0 / rate, self._on_timer)
        self.get_logger().info(f"mock camera: {self.width}x{self.height} rays at {rate:g} Hz on {topic} "
                               f"({self.frame_id}), at {position.tolist()} looking at {target.tolist()}, noise "
                               f"{noise:g} m; box {box_size.tolist()} at {box_position.tolist()}"
                               + (f", appears after {self.box_appear_after:g} s" if self.box_appear_after >= 0 else ""))

    def _on_set(self, params) -> SetParametersResult:
        for p in params:
            if p.name == "box_visible" and not isinstance(p.value, bool):
                return SetParametersResult(successful=False, reason="box_visible: expected true or false")
        return SetParametersResult(successful=True)

    def _on_joint_states(self, msg: JointState) -> None:
        index = {n: k for k, n in enumerate(msg.name)}
        if not all(n in index for n in self._state.names):
            return
        q = self.scene.neutral() if self._q is None else self._q
        values = np.array([msg.position[index[n]] for n in self._state.names])
        if np.isfinite(values).all():
            self._state.to_q(values, q)
            self._q = q

    def box_visible(self) -> bool:
        if 0.0 <= self.box_appear_after <= time.monotonic() - self._t_start and not self.get_parameter(
                "box_visible").value:
            self.set_parameters([rclpy.parameter.Parameter("box_visible", value=True)])
            self.box_appear_after = -1.0  # once: it may be hidden again
        return self.get_parameter("box_visible").value

    def _on_timer(self) -> None:
        t0 = time.perf_counter()
        shown = self.box_visible()
        if shown != self._box_shown:
            self.camera.set_boxes(self._table + ([self._box] if shown else []))
            self._box_shown = shown
            self.get_logger().info(f"the box is {'in' if shown else 'out of'} view")
        points = self.camera.render(self._q)
        msg = cloud_message(points, self.width, self.height, self.frame_id)
        msg.header.stamp = self.get_clock().now().to_msg()
        self._pub.publish(msg)
        self.clouds += 1
        self.render_ms = (time.perf_counter() - t0) * 1e3


def main(args=None) -> None:
    rclpy.init(args=args)
    try:
        node = MockCamera()
    except (InvalidInputError, OSError) as exc:
        rclpy.logging.get_logger("mock_camera").error(str(exc))
        rclpy.try_shutdown()
        raise SystemExit(1) from exc
    spin_node_until_shutdown(node, "mock_camera")


if __name__ == "__main__":
    main()
