"""Raw collision meshes (``robot.convex_hulls: false``) in the compiled pair distance kernel (issue 30, item 4).

coal 3 hands a mesh's triangles out one at a time (``tri_indices(i)``); reading them all at once raised
Boost.Python.ArgumentError while the collision barrier was built, so a documented setting crashed the
configure. Checked here: a Panda config on its raw meshes with a self-collision and an obstacle barrier
builds with both barriers compiled and steps; the kernel's pair distances equal coal's on the same meshes
(pinocchio's computeDistance on the collision model); a mesh whose triangles cannot be read falls back to
the Python path with the reason, never an exception.
"""

from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin
import pytest

from models import robot
from roboplan_ik_ros.core import CollisionBarrier, Oink
from roboplan_ik_ros.core.config import load_config
from roboplan_ik_ros.core.model import compiled_pairs
from roboplan_ik_ros.core.model.closest_pairs import empty_distances
from roboplan_ik_ros.core.model.obstacles import Obstacle
from roboplan_ik_ros.core.model.scene_config import scene_from_config
from roboplan_ik_ros.core.oink.controller import OinkController

needs_kernel = pytest.mark.skipif(
    compiled_pairs.LOAD_ERROR != "",
    reason=f"the pair distance kernel is not built ({compiled_pairs.LOAD_ERROR})",
)

TIP = "panda_hand_tcp"
BOX = Obstacle("box", "box", (0.2, 0.3, 0.3), position=(0.55, 0.0, 0.15))
DISTANCE_TOL = 1e-9  # [m] the kernel runs coal's own mesh distance on the same triangles
BARRIERS = [dict(name="self", type="collision", pairs="self", n_collision_pairs=3, d_min=0.01),
            dict(name="obstacles", type="collision", pairs="obstacles", n_collision_pairs=2, d_min=0.02)]


def _config():
    return load_config(dict(
        robot=dict(group="arm", convex_hulls=False),
        tasks=[dict(name="ee", type="frame", frame=TIP, position_cost=1.0, orientation_cost=0.1)],
        limits=[dict(type="position"), dict(type="velocity")],
        barriers=BARRIERS))


@pytest.fixture(scope="module")
def mesh_scene():
    config = _config()
    r = robot("panda")
    scene = scene_from_config(r.urdf_xml, r.srdf_xml, config.robot, r.package_paths, [BOX])
    meshes = [g.name for g in scene.collision_model.geometryObjects if isinstance(g.geometry, coal.BVHModelBase)]
    assert meshes, "convex_hulls: false left no raw mesh in the Panda's collision model: nothing to check"
    return scene


def test_mesh_triangles_are_the_meshes_own():
    """The triangles read one at a time index the mesh's vertices, one row per triangle."""
    r = robot("panda")
    scene = scene_from_config(r.urdf_xml, r.srdf_xml, _config().robot, r.package_paths, [])
    mesh = next(g.geometry for g in scene.collision_model.geometryObjects if isinstance(g.geometry, coal.BVHModelBase))
    triangles = compiled_pairs.mesh_triangles(mesh)
    assert triangles.shape == (mesh.num_tris, 3)
    assert triangles.min() >= 0 and triangles.max() < mesh.num_vertices
    last = mesh.tri_indices(mesh.num_tris - 1)
    assert list(triangles[-1]) == [last[0], last[1], last[2]]


@needs_kernel
def test_raw_meshes_build_compiled_barriers_that_step(mesh_scene):
    config = _config()
    q = mesh_scene.neutral()
    ctl = OinkController(mesh_scene, config, 0.01, q)
    barriers = {b.name: b for b in ctl.barriers}
    assert set(barriers) == {b["name"] for b in BARRIERS}
    for name, barrier in barriers.items():
        assert barrier.compiled, f"barrier {name!r} runs in Python: {barrier.compiled_reason}"
    ctl.tasks["ee"].set_target(pin.SE3(pin.utils.rotate("x", np.pi), np.array([0.45, 0.1, 0.4])))
    for _ in range(20):
        out = ctl.step(q)
        assert out.result.ok, out.result
        q = out.q_next
    assert np.all(np.isfinite(q))


@needs_kernel
@pytest.mark.parametrize("pairs", ["self", "obstacles"])
def test_compiled_mesh_distances_equal_coals(mesh_scene, pairs):
    """The closest pairs' distances from the kernel equal pinocchio/coal's computeDistance on the meshes,
    and the Python path finds the same pairs at the same distances."""
    oink = Oink(mesh_scene, "arm")
    make = dict(n_collision_pairs=4, dt=0.01, pairs=pairs, broad_phase_cutoff=10.0)
    compiled = CollisionBarrier(oink, **make)
    python = CollisionBarrier(oink, **make, use_compiled=False)
    assert compiled.compiled, compiled.compiled_reason
    gm = mesh_scene.collision_model
    rng = np.random.default_rng(7)
    mesh_pairs_checked = 0
    for _ in range(30):
        q = mesh_scene.random_configuration(rng, oink.group)
        pin.computeJointJacobians(mesh_scene.model, oink.data, q)
        pin.updateFramePlacements(mesh_scene.model, oink.data)
        pin.updateGeometryPlacements(mesh_scene.model, oink.data, gm, oink.geom_data)
        compiled.update(q, oink.data, oink.geom_data)
        python.update(q, oink.data, oink.geom_data)
        found, other = compiled.pairs.result, python.pairs.result
        k = found.count
        assert k == other.count and k > 0
        np.testing.assert_array_equal(found.pair_index[:k], other.pair_index[:k])
        np.testing.assert_allclose(found.distance[:k], other.distance[:k], rtol=0.0, atol=DISTANCE_TOL)
        for i in range(k):
            index = int(compiled.pairs.collision_pair[found.pair_index[i]])  # into gm.collisionPairs
            pair = gm.collisionPairs[index]
            coal_distance = pin.computeDistance(gm, oink.geom_data, index).min_distance
            assert found.distance[i] == pytest.approx(coal_distance, abs=DISTANCE_TOL), \
                f"{gm.geometryObjects[pair.first].name} x {gm.geometryObjects[pair.second].name}"
            geometries = (gm.geometryObjects[pair.first].geometry, gm.geometryObjects[pair.second].geometry)
            mesh_pairs_checked += any(isinstance(g, coal.BVHModelBase) for g in geometries)
    assert mesh_pairs_checked > 0, "no pair with a raw mesh was compared"


@pytest.mark.kernel
def test_a_mesh_whose_triangles_cannot_be_read_runs_in_python_with_the_reason(mesh_scene, monkeypatch):
    """Another coal's bindings that refuse our triangle read: the barrier builds on the Python path and
    says why (the configure note carries ``compiled_reason``), it does not raise."""
    def refuse(mesh):
        raise TypeError("tri_indices(coal::BVHModelBase self, unsigned int index)")

    monkeypatch.setattr(compiled_pairs, "mesh_triangles", refuse)
    barrier = CollisionBarrier(Oink(mesh_scene, "arm"), n_collision_pairs=3, dt=0.01, pairs="self")
    assert not barrier.compiled
    assert "BVHModelOBBRSS" in barrier.compiled_reason and "triangles" in barrier.compiled_reason, \
        barrier.compiled_reason


@needs_kernel
def test_a_cpp_exception_in_the_kernel_is_a_python_error_not_the_end_of_the_process(mesh_scene):
    """A C++ exception cannot unwind through ctypes: escaping the C API it would end the process (std::terminate,
    SIGABRT). Every entry point that reaches coal or allocates catches it; Python raises it with what threw.
    Provoked here by asking for a joint slot the vector cannot hold (std::length_error), in this process: the
    test ending at all shows that nothing terminated it."""
    objects = list(mesh_scene.collision_model.geometryObjects)[:2]
    pairs = compiled_pairs.CompiledPairs(objects, np.array([[0, 1]]))
    R, t = np.eye(3, order="F"), np.zeros(3)
    huge_joint = 2 ** 61  # joint_R.resize(huge_joint + 1) asks for 2^64 bytes of pointers: more than max_size
    with pytest.raises(RuntimeError, match=r"collision kernel: joint placements: coal or the allocator threw: .+"):
        pairs._check(pairs._step.pdk_set_joint(pairs._handle, huge_joint, R.ctypes.data, t.ctypes.data),
                     "joint placements")
    data = mesh_scene.model.createData()
    pin.forwardKinematics(mesh_scene.model, data, pin.neutral(mesh_scene.model))
    out = empty_distances(1)
    assert pairs.closest(data, 1, np.inf, out) == 1  # the kernel still answers after the exception
    assert np.isfinite(out.distance[0])
