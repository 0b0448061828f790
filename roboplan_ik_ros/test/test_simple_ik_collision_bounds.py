"""SimpleIK's collision bounds (collision_bounds.py): boxes that prove a configuration free of collision never
prove a colliding one free (robots alone, with world and attached obstacles of every shape, after moves), prove
most collision-free ones free, and follow the scene's obstacles; answers are the same with and without them."""

from __future__ import annotations

import numpy as np
import pytest

from models import scene
from roboplan_ik_ros.core import FrameGoal, Obstacle, SimpleIK, SimpleIKOptions
from roboplan_ik_ros.core.simple_ik import collision_bounds
from roboplan_ik_ros.core.simple_ik.collision_bounds import CollisionBounds
from test_simple_ik import GOAL_SEED, SOLVER_SEED, Checker, random_goal_configurations, talos_torso_left_arm

pytestmark = pytest.mark.kernel  # the bounds are the SimpleIK kernel's (ROBOPLAN_NO_COMPILE: skipped)

GROUPS = {"panda": "arm", "ur5": "", "talos": "torso_left_arm"}


def _scene(name: str):
    return talos_torso_left_arm() if name == "talos" else scene(name)


def _q0(s, name: str) -> np.ndarray:
    return s.named_configuration("default") if name == "panda" else s.neutral()


def _counts(s, ik: SimpleIK, q0: np.ndarray, n: int, seed: int = GOAL_SEED) -> tuple[int, int, int]:
    """(colliding, collision-free, proven free) over n random configurations of the solver's group; asserts that
    no colliding configuration is proven free."""
    bounds = ik._collision_bounds()
    assert bounds is not None
    rng = np.random.default_rng(seed)
    colliding = free = proven = 0
    for _ in range(n):
        q = s.random_configuration(rng, ik.group, q0)
        hit, ok = s.in_collision(q), bounds.free(q)
        assert not (hit and ok), q.tolist()
        colliding += hit
        free += not hit
        proven += ok
    return colliding, free, proven


@pytest.mark.parametrize("name", ["panda", "ur5", "talos"])
def test_bounds_never_prove_a_collision_free(name):
    """Random configurations (both outcomes many times): a proof of freedom is always right; on Panda and UR5
    most collision-free configurations are proven free (93 and 95 % measured; asserted >= 80 %)."""
    s = _scene(name)
    ik = SimpleIK(s, SimpleIKOptions(group_name=GROUPS[name], seed=SOLVER_SEED))
    colliding, free, proven = _counts(s, ik, _q0(s, name), 400 if name == "talos" else 2000)
    assert colliding >= 20 and free >= 20, (colliding, free)
    if name != "talos":
        assert proven >= 0.8 * free, (proven, free)


def test_bounds_with_obstacles_of_every_shape_and_their_moves():
    """World obstacles (box, sphere, cylinder, capsule) around the Panda and a box attached to its hand: never a
    wrong proof, and the bounds follow moves and removals (rebuilt on Scene.collision_version)."""
    s = scene("panda")
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", seed=SOLVER_SEED))
    q0 = _q0(s, "panda")
    obstacles = [Obstacle("box", "box", (0.4, 0.3, 0.2), position=(0.5, 0.0, 0.3)),
                 Obstacle("ball", "sphere", (0.12,), position=(0.0, 0.45, 0.5)),
                 Obstacle("post", "cylinder", (0.05, 0.8), position=(-0.4, -0.3, 0.4)),
                 Obstacle("rod", "capsule", (0.04, 0.5), position=(0.3, -0.4, 0.7),
                          quaternion_xyzw=(0.0, 0.7071068, 0.0, 0.7071068))]
    for o in obstacles:
        s.add_obstacle(o)
    s.add_obstacle(Obstacle("tool", "box", (0.05, 0.05, 0.25), position=(0.0, 0.0, 0.2), frame="panda_hand",
                            touch_links=("panda_hand", "panda_leftfinger", "panda_rightfinger")))
    try:
        before = ik._collision_bounds()
        colliding, free, _ = _counts(s, ik, q0, 1500)
        assert colliding >= 100 and free >= 100, (colliding, free)
        s.move_obstacle("ball", (0.3, 0.2, 0.6), (0.0, 0.0, 0.0, 1.0))
        assert ik._collision_bounds() is not before
        colliding, free, _ = _counts(s, ik, q0, 1500, seed=GOAL_SEED + 1)
        assert colliding >= 100 and free >= 100, (colliding, free)
    finally:
        for o in obstacles:
            s.remove_obstacle(o.name)
        s.remove_obstacle("tool")
    assert ik._collision_bounds().n_pairs == CollisionBounds.build(s.model, s.collision_model, ik.geom_data).n_pairs


def test_bounds_with_a_perceived_cloud():
    """A perceived cloud (an octree of points on a box's surface in front of the Panda) bounds as the box of its
    tree: never a wrong proof; configurations far from it are still proven free."""
    from roboplan_ik_ros.core.config import PerceptionConfig
    from roboplan_ik_ros.core.model.perceived_cloud import CloudIngest

    s = scene("panda")
    ik = SimpleIK(s, SimpleIKOptions(group_name="arm", seed=SOLVER_SEED))
    rng = np.random.default_rng(2)
    u = rng.uniform(-1.0, 1.0, (3000, 3))
    u[np.arange(3000), rng.integers(0, 3, 3000)] = rng.choice([-1.0, 1.0], 3000)  # on the faces of a cube
    points = np.array([0.45, 0.0, 0.3]) + u * np.array([0.1, 0.1, 0.15])
    s.set_perceived_cloud(CloudIngest(s, PerceptionConfig(voxel_size=0.0, octree_resolution=0.02)).cloud(points))
    try:
        colliding, free, proven = _counts(s, ik, _q0(s, "panda"), 1500)
        assert colliding >= 50 and free >= 50 and proven >= 10, (colliding, free, proven)
    finally:
        s.set_perceived_cloud(None)


@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_answers_are_the_same_with_and_without_the_bounds(name, monkeypatch):
    """The bounds only skip exact checks they would have passed: the same answers, iterations and restarts with
    and without them on 40 goals, with a box obstacle in the way of some."""
    s = _scene(name)
    check = Checker(name, s)
    q0 = _q0(s, name)
    tip = "panda_hand_tcp" if name == "panda" else "tool0"
    goals = [FrameGoal(tip, check.pose(q, tip)) for q in random_goal_configurations(s, GROUPS[name], q0, 40, seed=65)]
    s.add_obstacle(Obstacle("box", "box", (0.2, 0.2, 0.2), position=(0.35, 0.2, 0.35)))
    try:
        answers = {}
        for use in (True, False):
            monkeypatch.setattr(collision_bounds, "USE_COLLISION_BOUNDS", use)
            ik = SimpleIK(s, SimpleIKOptions(group_name=GROUPS[name], seed=SOLVER_SEED, max_time=10.0))
            answers[use] = [ik.solve([g], q0) for g in goals]
        for a, b in zip(answers[True], answers[False]):
            assert (a.success, a.iterations, a.restarts, a.message) == (b.success, b.iterations, b.restarts, b.message)
            np.testing.assert_array_equal(a.q, b.q)
            assert not a.success or not s.in_collision(a.q)
        assert sum(a.success for a in answers[True]) >= 30
    finally:
        s.remove_obstacle("box")
