"""An independent checker of a JointTrajectory as ros2_control's joint_trajectory_controller plays it:
per segment between two points, ``Trajectory::interpolate_between_points`` (joint_trajectory_controller/
src/trajectory.cpp) runs a cubic when both points have positions and velocities, a quintic when they
also have accelerations, else linear. Written here from those formulas (not from
core.simple_ik.path_timing), evaluated at dense samples of every segment.
"""

from __future__ import annotations

import numpy as np


def segment_coefficients(p0, v0, a0, p1, v1, a1, T: float) -> np.ndarray:
    """(6, n) power-basis coefficients c_0..c_5 of JTC's polynomial on one segment of duration T;
    ``v0``/``v1`` None: linear; ``a0``/``a1`` None: cubic; else quintic (the controller's formulas)."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    c = np.zeros((6, len(p0)))
    c[0] = p0
    if v0 is None or v1 is None:
        c[1] = (p1 - p0) / T
        return c
    v0, v1 = np.asarray(v0, float), np.asarray(v1, float)
    if a0 is None or a1 is None:
        c[1] = v0
        c[2] = (-3.0 * p0 + 3.0 * p1 - 2.0 * v0 * T - v1 * T) / T**2
        c[3] = (2.0 * p0 - 2.0 * p1 + v0 * T + v1 * T) / T**3
        return c
    a0, a1 = np.asarray(a0, float), np.asarray(a1, float)
    c[1] = v0
    c[2] = 0.5 * a0
    c[3] = (-20.0 * p0 + 20.0 * p1 - 3.0 * a0 * T**2 + a1 * T**2 - 12.0 * v0 * T - 8.0 * v1 * T) / (2.0 * T**3)
    c[4] = (30.0 * p0 - 30.0 * p1 + 3.0 * a0 * T**2 - 2.0 * a1 * T**2 + 16.0 * v0 * T + 14.0 * v1 * T) / (2.0 * T**4)
    c[5] = (-12.0 * p0 + 12.0 * p1 - a0 * T**2 + a1 * T**2 - 6.0 * v0 * T - 6.0 * v1 * T) / (2.0 * T**5)
    return c


def sample(times, positions, velocities=None, accelerations=None, per_segment: int = 200):
    """(t, q, qd, qdd) at ``per_segment`` + 1 evenly spaced instants of every segment (both ends
    included), each (S, n) but t (S,); velocities/accelerations: (N+1, n) or None (field empty)."""
    times = np.asarray(times, float)
    positions = np.asarray(positions, float)
    out_t, out_q, out_v, out_a = [], [], [], []
    s = np.linspace(0.0, 1.0, per_segment + 1)
    for k in range(len(times) - 1):
        T = times[k + 1] - times[k]
        c = segment_coefficients(
            positions[k], None if velocities is None else velocities[k],
            None if accelerations is None else accelerations[k], positions[k + 1],
            None if velocities is None else velocities[k + 1],
            None if accelerations is None else accelerations[k + 1], T)
        t = (s * T)[:, None]
        out_t.append(times[k] + s * T)
        out_q.append(sum(c[i] * t**i for i in range(6)))
        out_v.append(sum(i * c[i] * t ** (i - 1) for i in range(1, 6)))
        out_a.append(sum(i * (i - 1) * c[i] * t ** (i - 2) for i in range(2, 6)))
    return tuple(np.concatenate(x) for x in (out_t, out_q, out_v, out_a))


def limit_ratios(times, positions, velocities, accelerations, v_max, a_max, per_segment: int = 200):
    """(max_t |qd| / v_max, max_t |qdd| / a_max) over the controller's interpolation, per joint."""
    _, _, qd, qdd = sample(times, positions, velocities, accelerations, per_segment)
    return np.max(np.abs(qd), axis=0) / v_max, np.max(np.abs(qdd), axis=0) / a_max
