"""The ~/solve_ik stream (--load's "service" load, soak.py's): random reachable Panda goals and the
client timer that calls the node's service with them."""

from __future__ import annotations

import time


def service_goals(n: int, seed: int):
    """n random reachable tip poses of the Panda (FK of random in-limit collision-free configurations)."""
    from common import Robot, _example_robot, make_goals

    robot = Robot(_example_robot("panda"))
    goals, _ = make_goals(robot, n, seed)
    return robot.spec.tip_frame, [T for _, T in goals]


class ServiceStream:
    """A timer of ``node`` that calls ~/solve_ik ``rate`` times per second, one random goal per call."""

    def __init__(self, node, rate: float, tip: str, poses, frame: str):
        from roboplan_ik_interfaces.msg import PoseGoal
        from roboplan_ik_interfaces.srv import SolveIK

        from roboplan_ik_ros.node.message_conversions import pose_from_se3

        self.client = node.create_client(SolveIK, "/ik_controller/solve_ik")
        self.requests = []
        for T in poses:
            req = SolveIK.Request()
            g = PoseGoal(tip_frame=tip)
            g.pose.header.frame_id = frame
            pose_from_se3(T, g.pose.pose)
            req.goals = [g]
            self.requests.append(req)
        self.k = 0
        self.sent = self.answered = self.succeeded = 0
        self.codes: dict[int, int] = {}
        self.latencies: list[float] = []
        self.counting = False
        self.node = node
        self.rate = rate
        self.timer = None

    def start(self) -> bool:
        if not self.client.wait_for_service(timeout_sec=10.0):
            return False
        self.timer = self.node.create_timer(1.0 / self.rate, self._send)
        return True

    def _send(self) -> None:
        req = self.requests[self.k % len(self.requests)]
        self.k += 1
        counting = self.counting
        if counting:
            self.sent += 1
        t0 = time.perf_counter()
        fut = self.client.call_async(req)
        fut.add_done_callback(lambda f, t0=t0, c=counting: self._done(f, t0, c))

    def _done(self, fut, t0: float, counting: bool) -> None:
        if not counting:
            return
        dt = time.perf_counter() - t0
        res = fut.result()
        self.answered += 1
        self.latencies.append(dt)
        if res is not None:
            self.succeeded += bool(res.success)
            self.codes[res.error_code] = self.codes.get(res.error_code, 0) + 1

    def stop(self) -> None:
        if self.timer is not None:
            self.node.destroy_timer(self.timer)
            self.timer = None
