"""roboplan_ik_ros: real-time differential inverse kinematics for ROS 2.

ROS-free core in :mod:`roboplan_ik_ros.core`; ROS 2 nodes in :mod:`roboplan_ik_ros.node`.
"""
