"""Which joint bound holds a step: the position limits, velocity and acceleration/jerk bounds that a
step's solution sits on.

A streamed target held at its leash means the QP could not follow it. Its solution then sits on some
of its constraints (the active set): a joint whose ``dq`` is at a box limit's bound, within the
solver's precision, is held there by that limit. Each box limit keeps the bounds it was last solved
with (:meth:`Limit.last_bounds`), so this reads the cause off the step without solving anything again;
the acceleration limit's box, which also brakes for the position limits and levels off at v_max, says
which of its terms set the bound (:meth:`AccelerationLimit.bound_cause`). Barrier rows are reported by
the caller (they are rows, not a box). For reports (the node's status rate), not the tick.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ..model.scene import Scene
from ..model.joint_group import JointGroup
from ..oink import AccelerationLimit, FollowingErrorLimit, Limit, PositionLimit, VelocityLimit

# Motion-limit codes (ControllerStatus MOTION_LIMIT_*) of the bounds a step can sit on.
JOINT_BOUND = "joint_bound"  # a joint at (or braking for) its position limit
VELOCITY_BOUND = "velocity_bound"  # a joint at its velocity limit
ACCELERATION_BOUND = "acceleration_bound"  # a joint at its acceleration or jerk bound
FOLLOWING_ERROR = "following_error"  # the command leads the measured robot by max_state_divergence
# When several joints are held, the code reported is the first of these that holds one: a position
# limit stops the motion for good, a robot that trails waits, a velocity bound caps it, an acceleration
# bound only delays it.
BOUND_CODES = (JOINT_BOUND, FOLLOWING_ERROR, VELOCITY_BOUND, ACCELERATION_BOUND)


class BoundHit(NamedTuple):
    """One joint held by one bound: ``code`` (BOUND_CODES), the joint, and a sentence with its values."""

    code: str
    joint: str
    text: str


def binding_bounds(scene: Scene, group: JointGroup, limits: Sequence[Limit], q: np.ndarray, dq: np.ndarray,
                   dt: float, tolerance: float) -> list[BoundHit]:
    """The joints whose step ``dq`` (group nv) from ``q`` (full nq) sits within ``tolerance`` [rad or m]
    of a bound of ``limits`` (as they were last solved), one hit per joint (the first code of
    BOUND_CODES when several bounds hold it), in BOUND_CODES order."""
    best: dict[int, BoundHit] = {}
    for lim in limits:
        b = lim.last_bounds()
        if b is None or b.G is not None:
            continue
        at_upper = dq >= b.upper - tolerance
        at_lower = dq <= b.lower + tolerance
        for k in np.flatnonzero(at_upper | at_lower):
            upper = bool(at_upper[k]) and not (at_lower[k] and dq[k] < 0.0)  # a pinned joint: the side it moves to
            hit = _describe(scene, group, lim, int(k), upper, q, dq, dt)
            if hit is not None and (k not in best or _rank(hit) < _rank(best[k])):
                best[k] = hit
    return sorted(best.values(), key=_rank)


def _rank(hit: BoundHit) -> int:
    return BOUND_CODES.index(hit.code)


def _describe(scene: Scene, group: JointGroup, lim: Limit, k: int, upper: bool, q: np.ndarray, dq: np.ndarray,
              dt: float) -> BoundHit | None:
    joint, side = group.joint_names[k], "upper" if upper else "lower"
    unit = "m" if _prismatic(scene, group, k) else "rad"
    if isinstance(lim, PositionLimit):
        q_cmd, limit = _command_and_limit(scene, group, k, upper, q, dq)
        return BoundHit(JOINT_BOUND, joint, f"{joint} at its {side} position limit (q {q_cmd:.4f} {unit}, limit "
                                            f"{limit:.4f} {unit})")
    if isinstance(lim, VelocityLimit):
        b = lim.last_bounds()
        v = (dq[k] - 0.5 * (b.lower[k] + b.upper[k])) / dt  # the bounds are centred on the previous command
        return BoundHit(VELOCITY_BOUND, joint, f"{joint} at its velocity limit (v {v:+.4f} {unit}/s, v_max "
                                               f"{lim.v_max[k]:.4f} {unit}/s)")
    if isinstance(lim, FollowingErrorLimit):
        return BoundHit(FOLLOWING_ERROR, joint, f"{joint}: the command leads the measured joint by max_state_divergence "
                                                f"{lim.max_error:g} {unit} (it waits for the robot)")
    if isinstance(lim, AccelerationLimit):
        return _describe_acceleration(scene, group, lim, k, upper, q, dq, dt, unit)
    return None  # a limit this report does not know: the caller says nothing binds rather than guess


def _describe_acceleration(scene, group, lim: AccelerationLimit, k: int, upper: bool, q, dq, dt: float,
                           unit: str) -> BoundHit:
    joint, side = group.joint_names[k], "upper" if upper else "lower"
    u = dq[k] - lim.offset[k]  # the command's increment this step
    cause = lim.bound_cause(k, upper)
    if cause == "acceleration":
        a = (u - lim.u1[k]) / dt**2
        return BoundHit(ACCELERATION_BOUND, joint, f"{joint} at its acceleration bound (a {a:+.3f} {unit}/s^2, "
                                                   f"a_max {lim.a_max[k]:.3f} {unit}/s^2)")
    if cause == "jerk":
        j = (u - 2.0 * lim.u1[k] + lim.u2[k]) / dt**3
        return BoundHit(ACCELERATION_BOUND, joint, f"{joint} at its jerk bound (j {j:+.1f} {unit}/s^3, j_max "
                                                   f"{lim.j_max[k]:.1f} {unit}/s^3)")
    if cause == "velocity":
        return BoundHit(VELOCITY_BOUND, joint, f"{joint} levels off at its velocity bound (v {u / dt:+.4f} {unit}/s, "
                                               f"v_max {lim.v_max[k]:.4f} {unit}/s, under the jerk bound)")
    if cause == "following":
        return BoundHit(FOLLOWING_ERROR, joint, f"{joint} brakes for the edge of the following-error window (the "
                                                "command may lead the measured robot by max_state_divergence)")
    q_cmd, limit = _command_and_limit(scene, group, k, upper, q, dq)
    return BoundHit(JOINT_BOUND, joint, f"{joint} brakes for its {side} position limit within a_max (q {q_cmd:.4f} "
                                        f"{unit}, limit {limit:.4f} {unit}, v {u / dt:+.4f} {unit}/s)")


def _command_and_limit(scene: Scene, group: JointGroup, k: int, upper: bool, q: np.ndarray,
                       dq: np.ndarray) -> tuple[float, float]:
    """The joint's position after the step and its position limit on that side."""
    iq = int(group.bounded_q[np.flatnonzero(group.bounded_v == k)[0]])
    iv = int(group.v_indices[k])
    return float(q[iq] + dq[k]), float(scene.q_max_v[iv] if upper else scene.q_min_v[iv])


def _prismatic(scene: Scene, group: JointGroup, k: int) -> bool:
    """Joint k of the group (1-DoF joints: revolute, prismatic, continuous) moves along an axis."""
    name = scene.model.joints[int(group.joint_ids[k])].shortname()  # JointModelPX, ...PrismaticUnaligned
    return name.startswith("JointModelP") and not name.startswith("JointModelPlanar")
