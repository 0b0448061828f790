"""What the node does when ``~/collision_objects`` or ``~/pointcloud`` changed the scene (the collision
barriers' tables prepared outside a tick, ~/solve_ik's scene and the markers following) or refused a message.
A part of :class:`~.ik_controller.IKControllerNode` (its base class), called back by :mod:`.collision_objects`
and :mod:`.pointcloud_input`."""

from __future__ import annotations


class SceneUpdates:
    """Scene change callbacks of :class:`~.ik_controller.IKControllerNode` (its ``loop``, ``scene``, ``_lock``,
    ``_service``, ``_markers``)."""

    def _on_obstacles_changed(self) -> None:
        """After ~/collision_objects changed the scene: the barriers' tables are prepared for the next
        tick; the IK worker's scene follows; markers again."""
        self._prepare_collisions()
        with self._lock:
            obstacles = list(self.scene.obstacles.values())
        self._service.set_obstacles(obstacles)
        if self._markers is not None:
            self._markers.invalidate()
        self._markers_dirty = True

    def _on_perceived_changed(self) -> None:
        self._prepare_collisions()
        self._perceived_dirty = True

    def _prepare_collisions(self) -> None:
        """The collision barriers' new pair tables, built here, not in a tick (scene_lock: every change to
        the scene's obstacles holds it, so none happens meanwhile; the loop's lock is not needed)."""
        with self._service.scene_lock:
            self.loop.prepare_collisions()

    def _on_pointcloud_refused(self, reason: str) -> None:
        self._last_rejection = reason
        self._log_loop_event("warning", reason)

    def _on_collision_object_refused(self, reason: str) -> None:
        with self._lock:
            if self.loop is not None:
                self.loop.count_collision_object_refused()
        self._last_rejection = reason
        self.get_logger().warning(reason)
