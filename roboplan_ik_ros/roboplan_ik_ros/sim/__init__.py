"""Simulated robot, camera and drive for the demo, the tests and the benchmarks (never on a real robot).

mock_robot: a ROS node that integrates the commands and publishes /joint_states (a strict drive, optionally);
mock_camera: a ROS node that renders a depth camera's point cloud of a scene; strict_drive: the drive model
that refuses a command beyond the robot's velocity, acceleration or jerk bounds.
"""
