"""The speed a shaped joint target may move at so that the command still brakes within the following window, and
the least jerk bound whose braking reserve fits in it (the acceleration limit's braking policy,
core/oink/limits/acceleration_limit.py)."""

from __future__ import annotations

import math

import numpy as np

from .loop_modes import RAMP_ACCELERATION_SHARE

FOLLOWING_SPEED_MARGIN = 0.97  # following_speed keeps this share of the cruise speed the window allows
MIN_TARGET_SPEED = 1e-6  # [rad/s or m/s] a shaped joint target's speed limit is never below this (Ruckig needs > 0)


def following_speed(a_max: np.ndarray, j_max: np.ndarray, dt: float, room: float) -> np.ndarray:
    """[rad/s or m/s] per joint: FOLLOWING_SPEED_MARGIN of the steady speed u/dt whose braking travel under the
    acceleration limit's policy (acceleration_limit.py: ``B = n_A u + (u + alpha/2)^2 / (2 alpha) + E``, n_A for
    an acceleration of RAMP_ACCELERATION_SHARE a_max still ramping off) fits in ``room`` [rad or m]."""
    alpha = a_max * dt * dt
    delta = j_max * dt ** 3
    with np.errstate(divide="ignore", invalid="ignore"):
        n_c = np.where(np.isfinite(delta), np.maximum(np.ceil(alpha / delta) - 1.0, 0.0), 0.0)
        n_a = np.where(np.isfinite(delta),
                       np.maximum(np.ceil((1.0 + RAMP_ACCELERATION_SHARE) * alpha / delta) - 1.0, 0.0), 0.0)
    E = alpha * n_c ** 2
    b = alpha * (1.0 + 2.0 * n_a)  # u^2 + b u + c = 0
    c = alpha * alpha / 4.0 + 2.0 * alpha * (E - room)
    u = 0.5 * (-b + np.sqrt(np.maximum(b * b - 4.0 * c, 0.0)))
    return FOLLOWING_SPEED_MARGIN * np.maximum(u, 0.0) / dt


def min_jerk(a_max: float, dt: float, leash: float) -> float:
    """The least j_max whose braking reserve a_max dt^2 (ceil(a_max / (j_max dt)) - 1)^2 is below ``leash``."""
    alpha = a_max * dt * dt
    n_c = max(int(math.floor(math.sqrt(leash / alpha))) if alpha > 0 else 0, 0)  # n_c^2 alpha < leash
    while n_c > 0 and alpha * n_c * n_c >= leash:
        n_c -= 1
    return a_max / (dt * (n_c + 1))  # ceil(a/(j dt)) - 1 <= n_c  <=>  a/(j dt) <= n_c + 1
