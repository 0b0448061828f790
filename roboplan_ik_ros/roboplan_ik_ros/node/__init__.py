"""ROS 2 layer: the ``ik_controller`` lifecycle node, the ``mock_robot`` node and their helpers.

A thin layer over :mod:`roboplan_ik_ros.core`: message conversions (:mod:`.message_conversions`), the
``node:`` config section (:mod:`.node_config`), command outputs (:mod:`.outputs`), goals
(:mod:`.goals`), runtime parameters (:mod:`.parameters`),
status and diagnostics (:mod:`.diagnostics`) and RViz markers (:mod:`.markers`). Importing this
package does not import rclpy; the submodules do.
"""
