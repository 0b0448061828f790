"""CollisionBarrier: keep the closest collision pairs (robot x robot, robot x obstacles) at least d_min apart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import pinocchio as pin

from ...errors import InvalidInputError, check_positive
from ...model.closest_pairs import ClosestPairs, empty_distances
from ...model.compiled_pairs import BarrierStep, barrier_step
from ...keys import key
from ..kind import BuildContext, register
from .barrier import Barrier, BarrierConfig
from .collision_rows import CollisionRows, RowVertices, python_rows

if TYPE_CHECKING:
    from ..robot import Robot


COLLISION_PAIRS = ("self", "obstacles", "perceived", "all")


@dataclass
class CollisionBarrierConfig(BarrierConfig):
    """``type: collision`` (``self_collision``: the same with pairs ``self`` only): the closest collision
    pairs at least d_min apart."""

    pairs: str = key("self")  # "self" (robot x robot) | "obstacles" (robot x obstacles) | "perceived" | "all"
    n_collision_pairs: int = key(0)
    d_min: float = key(0.02)  # [m]
    broad_phase_cutoff: float = key(0.2)  # [m]
    # rows per close pair (a face's four corners and the witness): its witness points and its nearest other
    # vertices (1: RoboPlan's form)
    rows_per_pair: int = key(5)
    row_margin: float = key(0.01)  # [m] a vertex gets a row when its distance bound is within this of the pair's
    row_spacing: float = key(0.01)  # [m] ... and it is this far from the points already used on its geometry
    # pairs tracked by urgency beyond the n closest (class docstring); null: n_collision_pairs (0: RoboPlan's form)
    urgent_pairs: Union[int, None] = key(None)

    def validate(self, path: str) -> None:
        super().validate(path)
        if self.type == "self_collision":  # the name before obstacles: a collision barrier on the robot's pairs
            if "pairs" in self.given_keys and self.pairs != "self":
                raise InvalidInputError(f"{path}.pairs: type 'self_collision' covers pairs 'self' only; "
                                        f"use type 'collision' for pairs {self.pairs!r}")
            self.type = "collision"
        if self.pairs not in COLLISION_PAIRS:
            raise InvalidInputError(f"{path}.pairs: unknown pair set {self.pairs!r}; valid: {', '.join(COLLISION_PAIRS)}")
        if self.urgent_pairs is not None and not _is_count(self.urgent_pairs):
            raise InvalidInputError(f"{path}.urgent_pairs: expected an integer >= 0 (or null: n_collision_pairs), "
                                    f"got {self.urgent_pairs!r}")


def build_collision_barrier(config: CollisionBarrierConfig, context: BuildContext) -> CollisionBarrier:
    return CollisionBarrier(context.robot, config.n_collision_pairs, context.dt, config.d_min,
                            broad_phase_cutoff=config.broad_phase_cutoff, pairs=config.pairs,
                            rows_per_pair=config.rows_per_pair, row_margin=config.row_margin,
                            row_spacing=config.row_spacing,
                            urgent_pairs=config.n_collision_pairs if config.urgent_pairs is None else config.urgent_pairs,
                            **config.barrier_keys())


class CollisionBarrier(Barrier):
    """Rows on the closest pairs: ``h = d - d_min`` with d the signed distance of the pair, and more rows
    per close pair for its other near vertices (:mod:`collision_rows`).

    ``pairs`` chooses the pairs: ``"self"`` (the robot's own, after the SRDF), ``"obstacles"`` (robot
    links and attached objects against the scene's obstacles, see :class:`CollisionWorld`) or
    ``"all"``. An obstacle fixed in the world has no Jacobian of its own (joint 0 moves with no
    velocity); one attached to a link moves with that link's joint, like the link's own geometry.
    Obstacles added, moved or removed at run time are picked up at the next update.

    The ``n_collision_pairs`` closest pairs are re-selected at every update (exactly, with a
    bounding-sphere broad phase; pairs farther than ``broad_phase_cutoff`` are not evaluated and
    their rows stay unused). ``urgent_pairs`` more pairs are tracked by urgency: of the next
    ``2 urgent_pairs`` closest, those with the least ``d - lookahead * approach`` (approach: how
    much nearer the pair came since the last update [m per step]; lookahead: the steps the arm
    needs to brake, :meth:`set_braking_lookahead`). A pair that closes fast from beyond the n
    closest (a link swinging toward an obstacle while the hand rests near another) gets its rows
    while it can still be braked for, not once it is inside d_min. With n the unit vector from witness point 1 to witness point 2 and r_k
    the lever arm from joint k's origin to its witness point (world frame), the derivative of the
    distance is ``dh/dq = n^T J2_lin + (r2 x n)^T J2_ang - n^T J1_lin - (r1 x n)^T J1_ang`` with
    LOCAL_WORLD_ALIGNED joint Jacobians (checked against finite differences in the tests). A row
    whose witness points coincide (normal undefined) is zeroed.

    Args:
        n_collision_pairs: pairs constrained per step (``pairs="self"``: <= collision pairs after the SRDF).
        d_min: minimum distance [m].
        broad_phase_cutoff: pairs whose lower-bound distance exceeds this [m] are skipped; it must
            exceed d_min plus the largest approach of two bodies in one step.
        rows_per_pair: rows per pair (1: the witness row only, RoboPlan's form, the default in code; the
            YAML config's default is 5: a face's four corners and the witness).
        row_margin: a vertex gets a row when its distance bound is within this of the pair's distance [m].
        row_spacing: ... and it is at least this far from the points already used on its geometry [m].
        urgent_pairs: pairs tracked by urgency beyond the closest (0, the default in code: RoboPlan's form; the
            YAML config's default is n_collision_pairs).
        use_compiled: False computes the distances and rows in Python even when the compiled kernel is
            built (the same rows, slower; for tests and comparisons).
        name: defaults to the pair set ("self_collision", "obstacles", "collision").
    """

    def __init__(
        self,
        robot: Robot,
        n_collision_pairs: int,
        dt: float,
        d_min: float = 0.02,
        broad_phase_cutoff: float = 0.2,
        name: str | None = None,
        pairs: str = "self",
        rows_per_pair: int = 1,
        row_margin: float = 0.01,
        row_spacing: float = 0.01,
        use_compiled: bool = True,
        urgent_pairs: int = 0,
        **options: Any,
    ) -> None:
        name = name if name is not None else DEFAULT_NAMES.get(pairs, pairs)
        if not _is_count(urgent_pairs):
            raise InvalidInputError(f"{name}.urgent_pairs: expected an integer >= 0, got {urgent_pairs!r}")
        self.urgent_pairs = int(urgent_pairs)
        self.pairs = ClosestPairs(robot.scene, n_collision_pairs, broad_phase_cutoff, pairs, use_compiled)
        if not isinstance(rows_per_pair, (int, np.integer)) or isinstance(rows_per_pair, bool) or rows_per_pair < 1:
            raise InvalidInputError(f"{name}.rows_per_pair: expected an integer >= 1, got {rows_per_pair!r}")
        self.rows_per_pair = int(rows_per_pair)
        n_tracked = n_collision_pairs + self.urgent_pairs  # the closest, then the urgent ones
        super().__init__(robot, n_tracked * self.rows_per_pair, dt, name, **options)
        self.d_min = check_positive(d_min, f"{name}.d_min", allow_zero=True)
        self.row_margin = check_positive(row_margin, f"{name}.row_margin", allow_zero=True)
        self.row_spacing = check_positive(row_spacing, f"{name}.row_spacing", allow_zero=True)
        model = robot.scene.model
        self.rows = CollisionRows.zeros(self.size)
        # support[j, v] = 1 where velocity v moves joint j (the universe, j = 0, has none); group columns
        support = np.array([robot.scene.support_mask(j) for j in range(model.njoints)])
        self._columns = np.ascontiguousarray(np.arange(model.nv)[robot.group.v_columns], dtype=np.int64)
        self._support = np.ascontiguousarray(support[:, self._columns], dtype=float)
        self._pair_tables()
        self._prepared = None  # (pairs, joint1, joint2, vertices) built by prepare() for update() to swap in
        self._preparing = -1  # the collision_version a prepare() is building for
        self._waited = 0  # updates that went on with the previous tables while it did
        self._spare = None  # a compiled kernel no query uses: prepare() rebuilds it
        # the pairs with rows: the n closest (the query's own result without urgent pairs), then the urgent ones
        self._tracked = empty_distances(n_tracked) if self.urgent_pairs else self.pairs.result
        self._n_candidates = n_tracked + self.urgent_pairs  # the closest queried per update
        self._candidates = empty_distances(self._n_candidates)
        self._approach = np.zeros(self._n_candidates)  # [m per step] of each candidate since the last update
        self._urgency = np.zeros(self._n_candidates)
        self._order = np.zeros(self._n_candidates, dtype=np.int64)  # the kernel's selection scratch
        self._previous_pairs = np.full(self._n_candidates, -1, dtype=self._candidates.pair_index.dtype)
        self._previous_distance = np.zeros(self._n_candidates)
        self._previous_count = 0
        self._kept_pairs = self._previous_pairs.copy()  # the candidates of the update before (at another q)
        self._kept_distance = self._previous_distance.copy()
        self._kept_count = 0
        self._previous_q = np.full(robot.scene.model.nq, np.nan)
        self.lookahead_steps = 1.0  # steps to brake (set_braking_lookahead); 1: the arm can stop in one step
        self._distances = np.zeros(n_tracked)
        self._h = np.zeros(self.size)
        self._measured = np.zeros(self.size)
        self._kernel_rows = _RowsView(self.rows, self.value, self.jacobian, self._measured)
        self._next = empty_distances(n_collision_pairs)  # the closest pairs at the configuration evaluate() is given
        self._untracked_h = np.inf
        self._data: pin.Data | None = None  # whose world-frame joint Jacobians (data.J) self._J views
        self._q = np.zeros(robot.scene.model.nq)  # the compiled update's configuration (its BarrierStep reads it)
        self._kernel_step: BarrierStep | None = None  # the compiled calls' arrays (its J: self._data's)

    def _pair_tables(self) -> None:
        """Swap in :attr:`pairs`' derived tables (after its tables were (re)built here)."""
        self._joint1, self._joint2, self._vertices = _derived_tables(self.pairs)

    @property
    def needs_geometry(self) -> bool:
        """The Python path reads the geometry placements (geom_data); the compiled kernel places its own."""
        return self.pairs.compiled is None

    def prepare(self) -> None:
        """Build the pair tables for the scene as it is now, for the next :meth:`update` to swap in (call
        from the thread that changed the scene's obstacles, where they cannot change meanwhile): the
        control tick then pays a reference swap, not the rebuild. Until the swap a tick with the compiled
        kernel goes on with the previous tables (its own copy of the geometries); the Python path reads the
        scene's collision model, so it rebuilds in the tick if nothing is prepared for the version it sees."""
        version = self.scene.collision_version
        if self.pairs.version == version or self.pairs.pair_set == "self":
            return
        self._preparing = version
        spare, self._spare = self._spare, None
        pairs = self.pairs.rebuilt(spare)
        if pairs.compiled is not None and self._data is not None:  # the placement views, here rather than in the tick
            pairs.compiled.follow(self._data)
        self._prepared = (pairs, *_derived_tables(pairs))

    def expect_prepare(self) -> None:
        """The scene's obstacles just changed and :meth:`prepare` will follow (call where they changed, under
        the loop's lock): until it is done, a compiled tick goes on with its previous tables instead of
        rebuilding them itself."""
        self._preparing = self.scene.collision_version

    def _swap_prepared(self) -> None:
        """In the tick: take the prepared tables if they fit the scene; else rebuild here unless the
        compiled kernel can go on with the current ones while a prepare is under way."""
        version = self.scene.collision_version
        if self.pairs.version == version:
            return
        prepared = self._prepared
        if prepared is not None and prepared[0].version == version:
            old = self.pairs
            self.pairs, self._joint1, self._joint2, self._vertices = prepared
            if not self.urgent_pairs:  # the n closest are the tracked pairs: queried into the barrier's buffers
                self.pairs.result = self._tracked
            self._prepared = None
            self._spare = old.compiled  # no query uses it now: the next prepare rebuilds it in place
            self._waited = 0
            self._previous_count = self._kept_count = 0  # pair indices of the new tables: no approach known yet
            return
        if self._preparing == version and self.pairs.compiled is not None and self._waited < _MAX_PREPARE_WAIT:
            self._waited += 1  # being prepared in another thread: the kernel's geometries are the previous scene's
            return
        self._waited = 0
        if self.pairs.refresh():
            self._pair_tables()
            self._previous_count = self._kept_count = 0

    @property
    def compiled(self) -> bool:
        """True when the compiled kernel computes the distances and rows (else :attr:`compiled_reason`)."""
        return self.pairs.compiled is not None

    @property
    def compiled_reason(self) -> str:
        return self.pairs.compiled_reason

    def configure_notes(self) -> list[str]:
        notes = [f"barrier {self.name!r}: collision distances "
                 + (f"in Python ({self.compiled_reason})" if not self.compiled else "compiled")
                 + f", {self.rows_per_pair} row(s) per pair"]
        if self.safe_displacement_gain > 0.0 and self.safe_displacement_max_weight is None:
            notes.append(
                f"barrier {self.name!r}: no safe_displacement_max_weight: its weight r/||J_h||^2 is unbounded, "
                "and a pair whose distance the joints barely change (a link near the base against a table: "
                "||J_h||^2 ~ 1e-9) outweighs the tasks and stops the arm short of its goal; 1.0 caps it "
                "(config/panda.yaml)")
        return notes

    @property
    def row_names(self) -> list[str]:
        """"geometry1 <-> geometry2" per row (extra rows: "... (vertex)")."""
        names = []
        found, rows = self._tracked, self.rows
        for r in range(self.size):
            f = int(rows.pair[r]) if r < rows.count else -1
            if f < 0:
                names.append("(no pair within the broad-phase cutoff)")
                continue
            name = self.pairs.pair_name(int(found.pair_index[f]))
            first = r == 0 or int(rows.pair[r - 1]) != f
            names.append(name if first else f"{name} (vertex)")
        return names

    @row_names.setter
    def row_names(self, _names) -> None:  # Barrier.__init__ sets it; the names follow the rows
        pass

    def update(self, q: np.ndarray, data: pin.Data, geom_data: pin.GeometryData) -> None:
        self._swap_prepared()  # obstacles changed (the solver's geom_data already follows)
        if not len(self.pairs.first):  # no candidate pair (pairs: perceived before a cloud): no query, no row
            if self.rows.count or self._untracked_h != np.inf or not np.isinf(self.value).all():
                self.rows.count = 0
                self.value.fill(np.inf)
                self.jacobian.fill(0.0)
                self._measured.fill(np.inf)
                self._untracked_h = np.inf
            return
        if data is not self._data:
            self._J, self._data = data.J, data  # a view: it follows every later kinematics call
            self._kernel_step = None
        compiled = self.pairs.compiled
        if compiled is not None:  # one call: the tracked pairs (as _select_pairs) and their rows, _measured too
            step = self._kernel_step or self._make_kernel_step()
            self._q[:] = q
            step.lookahead, step.d_min, step.cutoff = self.lookahead_steps, self.d_min, self.pairs.cutoff
            step.rows_per_pair, step.margin, step.spacing = self.rows_per_pair, self.row_margin, self.row_spacing
            compiled.barrier_update(step, data)
            self._candidates.count, self._tracked.count, self.rows.count = \
                step.cand_count, step.tracked_count, step.row_count
            return
        found = self._select_pairs(q, data, geom_data)
        k = found.count
        pairs = found.pair_index[:k]
        J = self._J[:, self._columns]
        python_rows(self.pairs, found, self._vertices, geom_data, self.rows_per_pair, self.row_margin,
                    self.row_spacing, self.d_min, J, self._support[self._joint1[pairs]],
                    self._support[self._joint2[pairs]], self.rows, self.value, self.jacobian)
        self._measure()

    def _make_kernel_step(self) -> BarrierStep:
        """The compiled calls' arrays (the barrier's own buffers and self._data's Jacobians), built once per data;
        update() writes the settings (d_min, the rows' keys, the lookahead) into it at every call."""
        self._kernel_step = barrier_step(
            n=self.pairs.n, urgent=self.urgent_pairs, cutoff=self.pairs.cutoff, q=self._q, candidates=self._candidates,
            tracked=self._tracked, approach=self._approach, urgency=self._urgency, order=self._order,
            rows_per_pair=self.rows_per_pair, margin=self.row_margin, spacing=self.row_spacing, d_min=self.d_min,
            J=self._J, columns=self._columns, support=self._support, rows=self._kernel_rows, h_next=self._h,
            distance_next=self._distances)
        return self._kernel_step

    @property
    def measured_value(self) -> np.ndarray:
        """Per row, its pair's distance - d_min (what :meth:`evaluate` gives at the next configuration)."""
        return self._measured

    def _measure(self) -> None:
        count, measured = self.rows.count, self._measured
        measured.fill(np.inf)
        np.take(self._tracked.distance, self.rows.pair[:count], out=measured[:count])
        measured[:count] -= self.d_min

    def evaluate(self, data: pin.Data, geom_data: pin.GeometryData) -> np.ndarray:
        """h at ``data``'s configuration: every row of a pair gets the pair's distance - d_min (each row's
        vertex is at least as far as the pair's closest points). Also queries the closest pairs there,
        for :meth:`untracked_floor`."""
        h = self._h
        h.fill(np.inf)
        if not len(self.pairs.first):  # no candidate pair: nothing to measure (update() cleared the rows)
            self._untracked_h = np.inf
            return h
        found, rows = self._tracked, self.rows
        compiled, step = self.pairs.compiled, self._kernel_step
        if compiled is not None and step is not None:  # one call: the untracked pairs' floor and h (self._h)
            compiled.barrier_evaluate(step, data, found.count, rows.count)
            self._untracked_h = step.untracked_h
            return h
        # an untracked pair matters only if it ends inside d_min: pairs whose bound exceeds it are not evaluated
        nxt = self.pairs.query(data, geom_data, self._next, cutoff=self.d_min)
        tracked = set(found.pair_index[: found.count].tolist())
        self._untracked_h = np.inf
        for k, d in zip(nxt.pair_index[: nxt.count].tolist(), nxt.distance[: nxt.count].tolist()):
            if k not in tracked:
                self._untracked_h = d - self.d_min  # sorted by distance: the first is the least
                break
        if not rows.count:
            return h
        d = self._distances
        self.pairs.distances(data, geom_data, found.pair_index, found.count, d)
        used = rows.pair[: rows.count]
        h[: rows.count] = d[used]
        h[: rows.count] -= self.d_min
        return h

    def set_braking_lookahead(self, steps: float) -> None:
        """The steps [>= 1] the arm needs to brake to rest from its top speed: a candidate pair's urgency is
        its distance less its approach per step times this (the acceleration limit sets it)."""
        self.lookahead_steps = max(float(steps), 1.0)

    def _select_pairs(self, q: np.ndarray, data: pin.Data, geom_data: pin.GeometryData):
        """The tracked pairs at this update: the n closest, then of the next candidates those nearest to
        contact at their current approach (class docstring), in :attr:`_tracked` (sorted by distance)."""
        if not self.urgent_pairs:  # the n closest, as queried
            self._tracked = self.pairs.query(data, geom_data)
            return self._tracked
        cand = self.pairs.query(data, geom_data, self._candidates, n=self._n_candidates)
        k, n, out = cand.count, self.pairs.n, self._tracked
        if q.tobytes() == self._previous_q.tobytes():  # a second update at the same q (a re-solve): keep the approach
            m = self._kept_count  # ... of the pairs still candidates, measured against the update before that
            previous_pairs, previous_distance = self._kept_pairs, self._kept_distance
        else:
            self._kept_pairs, self._previous_pairs = self._previous_pairs, self._kept_pairs
            self._kept_distance, self._previous_distance = self._previous_distance, self._kept_distance
            self._kept_count = m = self._previous_count
            previous_pairs, previous_distance = self._kept_pairs, self._kept_distance
            self._previous_q[:] = q
        self._previous_count = k
        approach = self._approach[:k]
        approach.fill(0.0)
        if m and k:  # a candidate measured at the update before too: how much nearer it came since
            same = cand.pair_index[:k, None] == previous_pairs[None, :m]
            seen = same.any(axis=1)
            if seen.any():
                before = previous_distance[same.argmax(axis=1)[seen]]
                approach[seen] = np.maximum(before - cand.distance[:k][seen], 0.0)
        self._previous_pairs[:k] = cand.pair_index[:k]
        self._previous_distance[:k] = cand.distance[:k]
        size = len(out.distance)
        if k <= size:  # every candidate fits: all tracked, in distance order
            chosen = slice(0, k)
            count = k
        else:  # the n closest, then the most urgent others (least distance - lookahead * approach; ties: the nearer)
            urgency = self._urgency[: k - n]
            np.multiply(approach[n:], -self.lookahead_steps, out=urgency)
            urgency += cand.distance[n:k]
            urgent = np.argsort(urgency, kind="stable")[: size - n] + n
            urgent.sort()  # candidates are sorted by distance: so are the chosen ones
            chosen = np.concatenate((np.arange(n), urgent))
            count = size
        out.pair_index[:count] = cand.pair_index[chosen]
        out.distance[:count] = cand.distance[chosen]
        out.point1[:count] = cand.point1[chosen]
        out.point2[:count] = cand.point2[chosen]
        out.normal[:count] = cand.normal[chosen]
        out.count = count
        return out

    def untracked_floor(self, boundary_tolerance: float = 0.0) -> float:
        """A pair that was not among the closest at q (so at least as far as the farthest tracked one) may
        end at most ``boundary_tolerance`` [m] inside d_min, or no deeper than the tracked rows were."""
        if not np.isfinite(self._untracked_h):
            return np.inf
        tracked = self._measured[: self.rows.count]
        floor = min(-boundary_tolerance, float(tracked.min()) if len(tracked) else 0.0)
        return self._untracked_h - floor


    def row_hint(self, row: int) -> str:
        return "lower its d_min/safety_margin, or disable that pair in the SRDF (or move the obstacle)"

def _is_count(value) -> bool:
    """An integer >= 0 (not a bool)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 0


def _derived_tables(pairs: ClosestPairs) -> tuple[np.ndarray, np.ndarray, RowVertices | None]:
    """Per pair, the parent joint of its geometries; the vertices that may get rows (Python path)."""
    joint1 = np.array([pairs.object(int(g)).parentJoint for g in pairs.first], dtype=int)
    joint2 = np.array([pairs.object(int(g)).parentJoint for g in pairs.second], dtype=int)
    return joint1, joint2, RowVertices(pairs) if pairs.compiled is None else None


# updates that go on with the previous tables while a prepare() is expected; then the update rebuilds them
# itself (a prepare that never comes must not leave the barrier blind to a changed scene)
_MAX_PREPARE_WAIT = 50


DEFAULT_NAMES = {"self": "self_collision", "obstacles": "obstacles", "all": "collision"}


class _RowsView:
    """The arrays the kernel writes: the rows' data, h (the barrier's value), its Jacobian and each row's pair
    distance - d_min (measured_value)."""

    def __init__(self, rows: CollisionRows, value: np.ndarray, jacobian: np.ndarray, measured: np.ndarray) -> None:
        self.pair, self.a, self.b, self.normal = rows.pair, rows.a, rows.b, rows.normal
        self.h, self.jacobian, self.measured = value, jacobian, measured


SelfCollisionBarrier = CollisionBarrier  # the name of the pairs="self" barrier before obstacles existed


register("barriers", "collision", CollisionBarrierConfig, build_collision_barrier)
register("barriers", "self_collision", CollisionBarrierConfig, build_collision_barrier)
