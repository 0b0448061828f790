"""SimpleIK's descent: the iterations of one attempt from a start q (status, iterations, errors), for
:class:`~.solver.SimpleIK` (its base class :class:`Descent`); solver.py runs the attempts and restarts.

The cost of this solver is Python's: each pinocchio, numpy or BLAS call on these 6x7 matrices takes
0.1-1 us, and a solve pays every distinct call once more (1-3 us) when the caches are cold, e.g.
between a planner's other work. The common case (one goal, scalar joints in contiguous q and v
ranges) therefore runs a dedicated loop (_descend_fast) of ~12 calls per iteration:

* kinematics on a copy of the model whose root joints are placed in the goal frame, so that the
  tip's placement (a view held across solves) is T_goal^-1 T(q) itself, with no SE3 product, by one
  computeFrameJacobian over the joints that carry the tip only (the LOCAL Jacobian comes with it);
* the linear algebra in BLAS/LAPACK with positional arguments (dsyrk, dposv, dgemv, daxpy on
  J^T, which is F-ordered and passes without a copy), the step factor (step_size or the cap)
  applied by the in-place daxpy;
* the limits checked only when the step could reach them: a lower bound of the distance to the
  limits is kept across iterations and lowered by each step's 2-norm;
* one dot product rules out convergence in most iterations; the errors of the converged iteration
  are the reported ones (no second forward kinematics);
* input checks and the collision check (a pinocchio broad phase: AABB culling of the same pairs)
  kept cheap;
* with the compiled kernel (compiled_step.py, built by setup.py), the dls and lm_* step after the
  kinematics (direction, cap, limits and their active set) is one C call instead of the BLAS calls
  above, in the general loop too (without null-space terms); the Python step remains without it.
* with the kernel, when every joint that carries the tip is one of pinocchio's scalar revolute or
  prismatic joints (Panda, UR5, TALOS's torso and arm), the whole attempt of this loop is one C call
  (_descend_compiled, CompiledDescent): the kernel's own kinematics of that chain, log6, the same
  tests and the compiled step. The Python loop above was ~6-10 us per iteration (its ~12 calls), the
  C one is well under 1 us. The loop in Python remains for the other chains and without the kernel.

Several goals, Jlog6, continuous joints, scattered indices or objectives take the general loop
(_descend_general), which does the same arithmetic. test_simple_ik checks both against a plain numpy implementation of
the iteration.

Why three loops, not one (one per path):

* _descend_compiled (the kernel's sik_descend, compiled_step.py) is the common case with the kernel;
* _descend_fast is that case in Python: without the kernel, for newton_raphson and gauss_newton (not
  compiled), or for a chain the kernel does not compute (a free-flyer root, a mimic joint); the C loop
  mirrors it. Its kinematics run on the goal model (T_goal^-1 folded into the root joints' placements),
  so its T_goal^-1 T(q) rounds unlike _descend_general's ``Tinv * M0`` (the same 200 goals through both:
  most answers differ, by up to 4e-10, in the same iterations), and _descend_general's single-goal branch
  (the whole model's joint Jacobians, a frame update, an SE3 product, a second Jacobian call) took
  1.3-1.5x its time per iteration on Panda and UR5: merged, this case would be slower and its answers
  would move;
* _descend_general is everything else: several FrameGoals, Jlog6, error weights, null-space terms,
  continuous joints, scattered indices, and with ``objectives`` the PointGoal, AxisGoal and relative
  goals of objectives.py (their own errors and Jacobians; the step, the limits and the end tests are the
  FrameGoals' code).

The end tests (stall, plateau, time) and the step are written out in both Python loops, not shared through
a function: a call per iteration is the kind of cost _descend_fast exists to save.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pinocchio as pin
from scipy.linalg.blas import daxpy, ddot, dgemv, dnrm2

from .active_set import back_into_limits
from .compiled_step import DESCENT_STATUS, CompiledDescent
from .convergence import PLATEAU_RATIO, STALL_FACTOR, Constants, constants, reached, weighted_reached
from .methods import run_compiled_step
from .null_space import joint_limit_gradient, project_into_null_space
from .objectives import BoundObjective
from .options import SimpleIKOptions
from .workspace import Workspace

_LOCAL = pin.ReferenceFrame.LOCAL


class Descent:
    """The iteration loops of one attempt, a part of :class:`~.solver.SimpleIK` (its base class). They read the
    solver's ``scene``, ``data`` (the scene model's), the goal model ``_goal_model``, ``_goal_data`` (the root
    joints ``_root_joints`` placed for ``_goal_model_Tinv``) and the held views ``_placements`` and
    ``_goal_placements``, all built in SimpleIK.__init__; q moves in place."""

    def _descend(self, q, frame_ids, inv_targets, ws: Workspace, opt: SimpleIKOptions, deadline: float,
                 consts: Constants | None = None, objectives: list[BoundObjective] | None = None):
        """DLS iterations on q in place; returns (status, iterations, errors): status "converged" or why
        not, errors the (position, orientation) error arrays at the converged q (None otherwise). With
        ``objectives`` (objectives.py), for those instead of the FrameGoals of frame_ids, inv_targets."""
        c = consts or constants(opt)
        if (objectives is None and len(frame_ids) == 1 and ws.qs is not None and not opt.use_log_jacobian
                and not ws.weighted and not c.null_space):
            method = c.method
            if method.compiled and (method.lambda_k is None or method.lambda_affine is not None):
                descent = ws.compiled_descent(self.scene.model, frame_ids[0])
                if descent is not None:
                    return self._descend_compiled(descent, q, inv_targets[0], ws, opt, deadline, c)
            views = self._goal_frame_placement(frame_ids[0], inv_targets[0])
            if views is not None:
                return self._descend_fast(q, frame_ids[0], views, ws, opt, deadline, c)
        return self._descend_general(q, frame_ids, inv_targets, ws, opt, deadline, c, objectives)

    def _descend_compiled(self, descent: CompiledDescent, q, Tinv: pin.SE3, ws: Workspace, opt: SimpleIKOptions,
                          deadline: float, c: Constants):
        """_descend_fast's loop, the whole attempt in one call of the compiled kernel (compiled_step.py): its
        own kinematics of the tip's chain, log6, the same tests and the compiled step; the same statuses."""
        _configure_descent(descent, ws, opt, c)
        descent.set_goal(Tinv)
        budget = math.inf if deadline == math.inf else deadline - time.perf_counter()
        status, iters, pos, rot = descent.run(q, budget)
        if status == 0:
            return "converged", iters, (np.array([pos]), np.array([rot]))
        if status == 1:
            return f"not converged in {opt.max_iters} iterations", iters, None
        return DESCENT_STATUS[status], iters, None

    def _descend_fast(self, q, fid: int, views: tuple, ws: Workspace, opt: SimpleIKOptions, deadline: float,
                      c: Constants):
        """_descend_general's iteration for the common case (one goal, scalar joints in contiguous q and
        v ranges, no Jlog6), in fewer Python statements, which are most of an iteration's cost: one
        kinematics call on the goal model per iteration, computeFrameJacobian, which visits only the
        joints that carry the tip (TALOS: 9 of 32) and leaves ``T_err`` (a held view of its iMf[0]) =
        T_goal^-1 T(q) (``t`` its translation); BLAS/LAPACK called with positional arguments, the limits
        checked only when the step could reach them."""
        model, data = self._goal_model, self._goal_data
        computeFrameJacobian, log6, perf_counter, sqrt = pin.computeFrameJacobian, pin.log6, time.perf_counter, math.sqrt
        lo, hi, vs, nv, sliced = ws.lo, ws.hi, ws.vs, ws.nv, not ws.all_v
        P, c_lohi, slack = ws.P, ws.c_lohi, ws.margin_slack
        lin2, ang2, near, neg_step, max_step = c.lin2, c.ang2, c.near, c.neg_step, c.max_step
        step_size, clamp, max_iters = opt.step_size, opt.clamp_limits, opt.max_iters
        stall_iters, plateau_iters = c.stall_iters, c.plateau_iters
        method, gain = c.method, c.gain
        direction, lambda_k = method.direction, method.lambda_k
        T_err, t = views
        qg = q[ws.qs]  # view on the group's q
        margin = min(dgemv(1.0, P, qg, -1.0, c_lohi).tolist())  # distance to the limits (a lower bound later)
        if margin < 0.0:  # a seed outside the limits
            ws.clip(q)
            margin = 0.0
        # dls and lm_*: the whole step (direction, cap, limits) in one call of the compiled kernel
        compiled = ws.compiled_step() if method.compiled else None
        if compiled is not None:
            compiled.configure(lo, hi, ws.damping, step_size, max_step, clamp)
            compiled.bind(qg)
            Jc, ec, run_step, set_damping, copyto = compiled.J, compiled.e, compiled.run, compiled.set_damping, np.copyto
        stall_ref, ref_it = math.inf, 0  # stall: err must drop below half the error at ref_it
        flat_ref, flat = math.inf, 0  # plateau: err above 98 % of the previous error is a flat iteration
        for it in range(max_iters + 1):
            # the LOCAL Jacobian of the tip from the joints that carry it only (not the whole model), and
            # T_err (a held view of iMf[0], the universe-to-tip placement that pass leaves) = T_goal^-1 T(q)
            J = computeFrameJacobian(model, data, q, fid, _LOCAL)
            e = log6(T_err).vector
            err = ddot(e, e)
            if err <= near:
                p2, r2 = ddot(t, t), ddot(e, e, 3, 3, 1, 3, 1)  # |translation|^2, |e[3:]|^2
                if p2 <= lin2 and r2 <= ang2:
                    return "converged", it, (np.array([sqrt(p2)]), np.array([sqrt(r2)]))
            if it == max_iters:
                return f"not converged in {max_iters} iterations", it, None
            if err < stall_ref:
                stall_ref, ref_it = STALL_FACTOR * err, it
            elif it - ref_it >= stall_iters:
                return "stalled", it, None
            if err > flat_ref:
                flat += 1
                if flat >= plateau_iters:
                    return "plateau", it, None
            else:
                flat = 0
            flat_ref = PLATEAU_RATIO * err
            if perf_counter() >= deadline:
                return "time out", it, None
            if sliced:
                J = J[:, vs]
            if compiled is not None:  # the same step as below, in C (compiled_step.py)
                copyto(Jc, J)
                copyto(ec, e)
                if lambda_k is not None:
                    set_damping(lambda_k(gain, err))
                if run_step() < 0:
                    return "singular system", it + 1, None
                continue
            # dq = -step_size J^T (J J^T + damping I)^-1 e capped to max_step_norm, as in _descend_general
            dq = direction(J, J.T, e, err, gain, ws)
            if dq is None:
                return "singular system", it + 1, None
            norm = dnrm2(dq)
            if step_size * norm <= max_step:
                factor, step_len = neg_step, step_size * norm + slack
            else:
                factor, step_len = -max_step / norm, max_step + slack
            if step_len < margin:  # |step| bounds every joint's motion: no limit reachable
                daxpy(dq, qg, nv, factor)  # in place: qg += factor dq
                margin -= step_len
                continue
            x = qg.copy()
            daxpy(dq, qg, nv, factor)
            margin = min(dgemv(1.0, P, qg, -1.0, c_lohi).tolist())  # exact; < 0 iff a joint left its range
            if margin < 0.0:
                back_into_limits(clamp, x, qg, J, e, neg_step, lo, hi, max_step, ws)
                margin = 0.0  # a joint is on its limit
        return "not converged", max_iters, None  # pragma: no cover (the loop always returns)

    def _descend_general(self, q, frame_ids, inv_targets, ws: Workspace, opt: SimpleIKOptions, deadline: float,
                         c: Constants, objectives: list[BoundObjective] | None = None):
        """_descend for any goals and joints: stacked goals, Jlog6, continuous joints or scattered indices.

        With ``objectives`` (stacked objectives, objectives.py; frame_ids and inv_targets unused) the iteration
        evaluates them instead of the FrameGoals, with the same step (method, damping, cap), limits (active
        set), stall/plateau/time checks; converged when every objective's position and orientation errors are
        within the thresholds. The null-space terms are projected into the null space of the stacked (weighted)
        objective Jacobian; the manipulability is that of the one objective's link frame (_check_null_space
        allows it with one objective only)."""
        model, data = self.scene.model, self.data
        computeJointJacobians, updateFramePlacement = pin.computeJointJacobians, pin.updateFramePlacement
        getFrameJacobian, log6, Jlog6 = pin.getFrameJacobian, pin.log6, pin.Jlog6
        perf_counter, sqrt = time.perf_counter, math.sqrt
        lo, hi, qs, vs, all_v = ws.lo, ws.hi, ws.qs, ws.vs, ws.all_v
        single = objectives is None and len(frame_ids) == 1
        if objectives is None:
            fid0, Tinv0 = frame_ids[0], inv_targets[0]
            M0 = self._placement(fid0)  # T(q)
        else:  # (fid0: the frame of the null-space terms)
            fid0, lin, ang = objectives[0].fid, opt.max_linear_error_norm, opt.max_angular_error_norm
            pos, rot = np.empty(len(objectives)), np.empty(len(objectives))  # the errors of this iteration
        lin2, ang2, near = c.lin2, c.ang2, c.near
        neg_step, step2, max_step, max_step2 = c.neg_step, c.step2, c.max_step, c.max_step2
        clamp, max_iters = opt.clamp_limits, opt.max_iters
        # a zero weight leaves some log6 components free: the exact derivative of the others is Jlog6 J
        use_jlog = opt.use_log_jacobian or ws.masked
        stall_iters, plateau_iters = c.stall_iters, c.plateau_iters
        method, gain, weighted, sw, sw_col = c.method, c.gain, ws.weighted, ws.sw, ws.sw_col
        direction = method.direction
        null_space = c.null_space
        qg = q[qs] if qs is not None else None  # view on the group's q (fast path)
        margin_of, margin_slack = ws.margin, ws.margin_slack
        margin = margin_of(qg) if qg is not None else 0.0
        if margin < 0.0:  # a seed outside the limits
            ws.clip(q)
            margin = 0.0
        if qg is None:
            ws.start_attempt(q)
        # dls and lm_* without null-space terms: the step in one call of the compiled kernel, on q's view
        # (scalar joints) or on the limit coordinates x_v (continuous joints: then integrated)
        compiled = ws.compiled_step() if method.compiled and not null_space else None
        if compiled is not None:
            compiled.configure(lo, hi, ws.damping, opt.step_size, max_step, clamp)
            compiled.bind(qg if qg is not None else ws.x_v)
        ref_err, ref_it = math.inf, 0  # stall detection
        prev_err, flat = math.inf, 0  # plateau detection
        for it in range(max_iters + 1):
            computeJointJacobians(model, data, q)  # also the joint placements
            if objectives is not None:
                pin.updateFramePlacements(model, data)
                e, J = ws.e, ws.J
                converged, r = True, 0
                for k, o in enumerate(objectives):
                    ek = e[r : r + o.rows]
                    o.compute(model, data, vs, ek, J[r : r + o.rows])
                    pos[k], rot[k] = o.errors(ek)
                    converged = converged and pos[k] <= lin and rot[k] <= ang
                    r += o.rows
                if converged:  # report the true errors (free components included), as the FrameGoal loops do
                    r = 0
                    for k, o in enumerate(objectives):
                        pos[k], rot[k] = o.true_errors(e[r : r + o.rows])
                        r += o.rows
                    return "converged", it, (pos, rot)
                e = np.multiply(e, sw, out=ws.ew)  # W^1/2 e, W^1/2 J
                np.multiply(J, sw_col, out=J)
                err = float(e.dot(e))
            elif single:
                updateFramePlacement(model, data, fid0)  # M0 follows
                T_err = Tinv0 * M0  # T_goal^-1 T(q)
                e = log6(T_err).vector
                if weighted:
                    if weighted_reached(T_err.translation, e, ws, 0, lin2, ang2, near):
                        t, w = T_err.translation, e[3:]
                        return "converged", it, (np.array([sqrt(t.dot(t))]), np.array([sqrt(w.dot(w))]))
                    e = np.multiply(e, sw, out=ws.ew)
                    err = e.dot(e)
                else:
                    err = e.dot(e)
                    if err <= near:
                        t, w = T_err.translation, e[3:]
                        p2, r2 = t.dot(t), w.dot(w)
                        if p2 <= lin2 and r2 <= ang2:
                            return "converged", it, (np.array([sqrt(p2)]), np.array([sqrt(r2)]))
            else:
                e, J = ws.e, ws.J
                converged, err = True, 0.0
                for k, (fid, Tinv) in enumerate(zip(frame_ids, inv_targets)):
                    T_err = Tinv * updateFramePlacement(model, data, fid)
                    ek = e[6 * k : 6 * k + 6]
                    ek[:] = log6(T_err).vector
                    if weighted:
                        if converged and not weighted_reached(T_err.translation, ek, ws, k, lin2, ang2, near):
                            converged = False
                    else:
                        err_k = ek.dot(ek)
                        if converged and not (err_k <= near and reached(T_err, ek, lin2, ang2)):
                            converged = False
                        err += err_k
                    Jk = getFrameJacobian(model, data, fid, _LOCAL)[:, vs]
                    if use_jlog:
                        np.matmul(Jlog6(T_err), Jk, out=J[6 * k : 6 * k + 6])
                    else:
                        J[6 * k : 6 * k + 6] = Jk
                if converged:
                    return "converged", it, self._errors(q, frame_ids, inv_targets)
                if weighted:  # W^1/2 e and W^1/2 J
                    e = np.multiply(e, sw, out=ws.ew)
                    err = e.dot(e)
                    np.multiply(J, sw_col, out=J)
            if it == max_iters:
                return f"not converged in {max_iters} iterations", it, None
            if err < STALL_FACTOR * ref_err:
                ref_err, ref_it = err, it
            elif it - ref_it >= stall_iters:
                return "stalled", it, None
            if err > PLATEAU_RATIO * prev_err:
                flat += 1
                if flat >= plateau_iters:
                    return "plateau", it, None
            else:
                flat = 0
            prev_err = err
            if perf_counter() >= deadline:
                return "time out", it, None
            if single:
                J = getFrameJacobian(model, data, fid0, _LOCAL)
                if not all_v:
                    J = J[:, vs]
                if use_jlog:
                    J = Jlog6(T_err) @ J
                if weighted:
                    J = np.multiply(J, sw_col, out=ws.Jw)
            if compiled is not None:  # the same step as below, in C (compiled_step.py)
                if not run_compiled_step(compiled, method, J, e, gain, err, qg, ws, model, q):
                    return "singular system", it + 1, None
                continue
            # dq = -step_size * direction, capped to max_step_norm (the factor is applied with the step)
            dq = direction(J, J.T, e, err, gain, ws)
            if dq is None:
                return "singular system", it + 1, None
            if null_space:  # the task step plus the projected null-space terms, then the cap
                dq = neg_step * dq + self._null_space_motion(q, J, fid0, ws, opt)
                n2 = dq.dot(dq)
                factor = 1.0 if n2 <= max_step2 else max_step / sqrt(n2)
            else:
                n2 = dq.dot(dq)
                factor = neg_step if n2 * step2 <= max_step2 else -max_step / sqrt(n2)
            if qg is not None:  # fast path: q[qs] += dq within [lo, hi]
                # |factor dq| (2-norm) bounds every joint's motion: while it is below the distance to the
                # limits (margin, a lower bound kept across iterations), the step cannot leave them.
                step_len = abs(factor) * sqrt(n2) + margin_slack
                if step_len < margin:
                    daxpy(dq, qg, a=factor)  # in place: qg += factor dq
                    margin -= step_len
                    continue
                x = qg.copy()
                daxpy(dq, qg, a=factor)
                margin = margin_of(qg)  # exact; < 0 iff a joint left its range
                if margin < 0.0:
                    back_into_limits(clamp, x, qg, J, e, neg_step, lo, hi, max_step, ws)
                    margin = 0.0  # a joint is on its limit
            else:  # general path (continuous joints, scattered indices): the limits on x_v (Workspace)
                dq *= factor
                ws.step_general(model, q, dq, J, e, neg_step, max_step, clamp)
        return "not converged", max_iters, None  # pragma: no cover (the loop always returns)

    def _null_space_motion(self, q: np.ndarray, J: np.ndarray, fid: int, ws: Workspace,
                           opt: SimpleIKOptions) -> np.ndarray:
        """(I - J^+ J) (k_sigma Sigma + k_m grad m + k_b (q_bias ⊖ q)) at q (null_space.py), J the step's
        (weighted) Jacobian; self.data holds q's joint Jacobians. Sigma acts on the joints with position
        limits (the scene's, not solve_nearby's box; continuous joints have none to avoid), the bias by
        pin.difference (a continuous joint turns the short way to its bias angle)."""
        g = np.zeros(ws.nv)
        if opt.joint_limit_gain > 0.0:
            x = q[ws.qs] if ws.qs is not None else ws.x_v  # (x_v: continuous joints' entries meet infinite limits)
            g += opt.joint_limit_gain * joint_limit_gradient(x, ws.scene_lo, ws.scene_hi, opt.joint_limit_ps,
                                                             opt.joint_limit_pi)
        if opt.manipulability_gain > 0.0:
            J_world = pin.getFrameJacobian(self.scene.model, self.data, fid, pin.ReferenceFrame.WORLD)[:, ws.vs]
            g += opt.manipulability_gain * ws.manipulability.value_and_gradient(J_world)[1]
        if opt.bias_gain > 0.0:
            g += opt.bias_gain * pin.difference(self.scene.model, q, ws.q_bias)[ws.group.v_indices]
        return project_into_null_space(J, g)

    def _placement(self, fid: int) -> pin.SE3:
        """data.oMf[fid], a view that follows every later kinematics call on self.data (fetched once)."""
        M = self._placements.get(fid)
        if M is None:
            M = self._placements[fid] = self.data.oMf[fid]
        return M

    def _goal_frame_placement(self, fid: int, Tinv: pin.SE3) -> tuple[pin.SE3, np.ndarray] | None:
        """The goal model placed for ``Tinv`` and held views of its iMf[0] (= T_goal^-1 T(q) after its
        computeFrameJacobian for fid) and of that placement's translation, or None for a frame on the
        universe (the root joints do not carry it)."""
        views = self._goal_placements.get(fid, 0)
        if views == 0:
            if self.scene.model.frames[fid].parentJoint == 0:
                views = None
            else:  # computeFrameJacobian leaves the universe-to-frame placement in iMf[0]
                M = self._goal_data.iMf[0]
                views = (M, M.translation)
            self._goal_placements[fid] = views
        if views is not None and self._goal_model_Tinv is not Tinv:  # once per solve (Tinv is held)
            for j, placement in self._root_joints:
                self._goal_model.jointPlacements[j] = Tinv * placement
            self._goal_model_Tinv = Tinv
        return views

    def _errors(self, q: np.ndarray, frame_ids: list[int], inv_targets: list[pin.SE3]) -> tuple[np.ndarray, np.ndarray]:
        """Position [m] and orientation [rad] error of every goal at q."""
        model, data = self.scene.model, self.data
        pin.forwardKinematics(model, data, q)
        pos, rot = np.empty(len(frame_ids)), np.empty(len(frame_ids))
        for k, (fid, Tinv) in enumerate(zip(frame_ids, inv_targets)):
            T_err = Tinv * pin.updateFramePlacement(model, data, fid)
            t, w = T_err.translation, pin.log3(T_err.rotation)
            pos[k], rot[k] = math.sqrt(t @ t), math.sqrt(w @ w)
        return pos, rot

    def _objective_errors(self, q: np.ndarray, objectives: list[BoundObjective],
                          ws: Workspace) -> tuple[np.ndarray, np.ndarray]:
        """Position [m] and orientation [rad] error of every objective at q (objectives.py's errors)."""
        model, data = self.scene.model, self.data
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        pos, rot = np.empty(len(objectives)), np.empty(len(objectives))
        r = 0
        for k, o in enumerate(objectives):
            e, J = ws.e[r : r + o.rows], ws.J[r : r + o.rows]
            o.compute(model, data, ws.vs, e, J)
            pos[k], rot[k] = o.true_errors(e)
            r += o.rows
        return pos, rot


def _configure_descent(descent: CompiledDescent, ws: Workspace, opt: SimpleIKOptions, c: Constants) -> None:
    """The compiled descent's constants for ``opt`` (set again only when the constants or the method's damping
    changed) and its step's bounds and damping."""
    method = c.method
    lam = (0.0, ws.damping) if method.lambda_k is None else method.lambda_affine(c.gain)
    key = descent.key
    if key is None or key[0] is not c or key[1] != lam:
        descent.configure(c.lin2, c.ang2, c.near, opt.max_iters, c.stall_iters, c.plateau_iters, STALL_FACTOR,
                          PLATEAU_RATIO, *lam)
        descent.key = (c, lam)
    descent.step.configure(ws.lo, ws.hi, ws.damping, opt.step_size, c.max_step, opt.clamp_limits)
