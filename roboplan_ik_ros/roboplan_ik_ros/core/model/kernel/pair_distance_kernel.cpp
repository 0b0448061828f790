// Collision pair distances and the collision barrier's rows in one compiled call (loaded with ctypes
// by core/model/compiled_pairs.py; a plain shared library with a C API, linked against coal).
//
// A kernel holds its own copy of the geometries of a pair set (built once from their parameters:
// coal's shapes, convex hulls of the same points, point clouds of the same cells), the pairs, and
// pointers to pinocchio's Data: the joint placements oMi[j] (rotation column-major, translation) and
// the world-frame joint Jacobians data.J (6 x nv, column-major), read in place at every call.
//
// Two calls per step and collision barrier: pdk_barrier_update (the tracked pairs and their rows at q: 1-5
// below, pdk_closest, pdk_select_tracked and pdk_rows in turn) and pdk_barrier_evaluate (at the step's end:
// the untracked pairs within d_min, the tracked pairs' distances), over the barrier's arrays (barrier_step.h):
//   1. geometry placements T_world_geom = oMi[joint] * placement;
//   2. broad phase: a lower bound of each pair's distance (bounding spheres; a geometry fixed in the
//      world: the moving sphere against its box), pairs above `cutoff` never evaluated;
//   3. narrow phase: coal's distance (GJK/EPA, no guess kept from an earlier call: same input, same
//      result) in increasing lower bound until no remaining pair can be among the n closest; a point
//      cloud (an octree's occupied cells) has its own exact narrow phase (cloud_distance.hpp);
//   4. rows: per close pair, its witness row (p1, p2, n) and up to rows_per_pair - 1 rows for other
//      vertices of either geometry within `margin` of the closest distance (module docstring of
//      compiled_pairs.py; each is a lower bound of that vertex's distance, so never more than the
//      pair's own): a vertex of one geometry only when the other is convex, or a point cloud taken
//      locally as the plane through its witness point (a flat link face against a wall of cells);
//   5. each row's h = n.(b - a) - d_min and dh/dq = n^T (dp_b/dq - dp_a/dq) over the group's columns.
// The Python path (closest_pairs.py, witness_rows.py) computes the same rows with the same rules.
//
// One translation unit: this file includes kernel_types.hpp (the geometries, the pairs found, the kernel's
// state), geometry.hpp (placements, bounds, support functions), cloud_distance.hpp (point clouds: their
// narrow phase and extra rows) and barrier_step.h (a barrier's arrays: the struct ctypes mirrors, and its layout
// functions); here, a pair's distance, the rows' Jacobians and the C API (pdk_*).
#include <coal/BVH/BVH_model.h>
#include <coal/distance.h>
#include <coal/shape/convex.h>
#include <coal/shape/geometric_shapes.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "kernel_types.hpp"
#include "geometry.hpp"
#include "cloud_distance.hpp"

namespace {

// A pair's signed distance, witness points (p1 on a, p2 on b) and coal's normal (from a to b), if below
// `limit` (else false; a pair without a point cloud is always computed).
bool pair_distance(Kernel& k, const Geometry& a, const Geometry& b, double limit, double& d, Vec3s& p1, Vec3s& p2,
                   Vec3s& normal) {
  if (a.cloud && b.cloud) return false;  // never paired (two world geometries)
  if (b.cloud) return cloud_distance(k, a, b, limit, d, p1, p2, normal);
  if (a.cloud) {
    if (!cloud_distance(k, b, a, limit, d, p2, p1, normal)) return false;
    normal = -normal;
    return true;
  }
  coal::DistanceResult res;
  coal::distance(a.shape.get(), a.T_world_geom, b.shape.get(), b.T_world_geom, k.request, res);
  d = res.min_distance;
  p1 = res.nearest_points[0];
  p2 = res.nearest_points[1];
  normal = res.normal;
  return true;
}

// n^T dp/dq of a point p (world) fixed to `joint`, over the group's columns, added times `sign` to row.
void add_point_jacobian(const double* J, int64_t nv, const int64_t* columns, int64_t n_columns,
                        const double* support_row, const Vec3s& p, const Vec3s& n, double sign, double* row) {
  const Vec3s pxn = p.cross(n);
  for (int64_t c = 0; c < n_columns; ++c) {
    if (support_row[c] == 0.0) continue;
    const double* Jc = J + 6 * columns[c];  // column-major 6 x nv: linear then angular
    row[c] += sign * (n[0] * Jc[0] + n[1] * Jc[1] + n[2] * Jc[2] + pxn[0] * Jc[3] + pxn[1] * Jc[4] + pxn[2] * Jc[5]);
  }
  (void)nv;
}

// A C++ exception must not cross the C API: ctypes' frames cannot unwind it, so it would end the process
// (std::terminate: SIGABRT). Every entry point that reaches coal or allocates runs its body through `guarded`:
// an exception is kept in k.error (pdk_last_error) and the call returns PDK_THREW; Python raises it.
constexpr int64_t PDK_THREW = -2;

template <typename Body>
int64_t guarded(Kernel& k, Body body) {
  try {
    return body();
  } catch (const std::exception& e) {
    k.error = e.what();
  } catch (...) {
    k.error = "an exception that is not a std::exception";
  }
  return PDK_THREW;
}

}  // namespace

extern "C" {

#include "barrier_step.h"

void* pdk_new(double gjk_tolerance) {
  try {
    return new Kernel(gjk_tolerance);
  } catch (...) {
    return nullptr;
  }
}

void pdk_free(void* handle) { delete static_cast<Kernel*>(handle); }

// What the last call that returned PDK_THREW (-2) caught; valid until the next such call.
const char* pdk_last_error(void* handle) { return static_cast<Kernel*>(handle)->error.c_str(); }

// Add a geometry; returns its index, or -1 (unknown kind, bad parameters, or coal refused it), or PDK_THREW.
// params: BOX (x, y, z full sizes), SPHERE (r), CYLINDER (r, length), CAPSULE (r, length),
// OCTREE (resolution, grid cell size of its narrow phase [m]; <= 0: 5 resolutions); points (n, 3) row-major:
// CONVEX (its hull is taken), MESH (vertices), OCTREE (the occupied cells' centres); triangles (m, 3): MESH. placement: R (3 x 3 row-major) then t, in the joint frame.
int64_t pdk_add_geometry(void* handle, int64_t kind, const double* params, const double* points, int64_t n_points,
                         const int64_t* triangles, int64_t n_triangles, int64_t joint, const double* placement) {
  Kernel& k = *static_cast<Kernel*>(handle);
  Geometry g;
  try {
    switch (kind) {
      case BOX:
        g.shape = std::make_shared<coal::Box>(params[0], params[1], params[2]);
        for (int i = 0; i < 8; ++i)
          g.vertices.emplace_back((i & 1 ? 0.5 : -0.5) * params[0], (i & 2 ? 0.5 : -0.5) * params[1],
                                  (i & 4 ? 0.5 : -0.5) * params[2]);
        break;
      case SPHERE:
        g.shape = std::make_shared<coal::Sphere>(params[0]);
        g.round_radius = params[0];
        break;
      case CYLINDER:
      case CAPSULE:
        if (kind == CYLINDER) g.shape = std::make_shared<coal::Cylinder>(params[0], params[1]);
        else g.shape = std::make_shared<coal::Capsule>(params[0], params[1]);
        g.round_radius = params[0];
        g.half_length = params[1] / 2;
        break;
      case CONVEX: {
        if (n_points < 4) return -1;
        auto pts = std::make_shared<std::vector<Vec3s>>();
        for (int64_t i = 0; i < n_points; ++i) pts->emplace_back(points[3 * i], points[3 * i + 1], points[3 * i + 2]);
        g.vertices = *pts;
        g.shape.reset(coal::ConvexBase::convexHull(pts, static_cast<unsigned int>(n_points), false, nullptr));
        break;
      }
      case MESH: {
        if (n_points < 3 || n_triangles < 1) return -1;
        auto bvh = std::make_shared<coal::BVHModel<coal::OBBRSS>>();
        bvh->beginModel(static_cast<unsigned int>(n_triangles), static_cast<unsigned int>(n_points));
        for (int64_t i = 0; i < n_triangles; ++i) {
          const int64_t* t = triangles + 3 * i;
          bvh->addTriangle(Vec3s(points[3 * t[0]], points[3 * t[0] + 1], points[3 * t[0] + 2]),
                           Vec3s(points[3 * t[1]], points[3 * t[1] + 1], points[3 * t[1] + 2]),
                           Vec3s(points[3 * t[2]], points[3 * t[2] + 1], points[3 * t[2] + 2]));
        }
        bvh->endModel();
        g.shape = bvh;
        for (int64_t i = 0; i < n_points; ++i) g.vertices.emplace_back(points[3 * i], points[3 * i + 1], points[3 * i + 2]);
        break;
      }
      case OCTREE: {  // our point cloud (cloud_distance), not coal's octree: params (resolution, grid cell size)
        g.cloud = make_cloud(points, n_points, params[0], params[1]);
        if (!g.cloud) return -1;
        break;
      }
      default: return -1;
    }
    if (g.cloud) {  // the cubes' bounds
      g.aabb_lo = g.aabb_hi = g.cloud->points[0];
      for (const Vec3s& p : g.cloud->points) {
        g.aabb_lo = g.aabb_lo.cwiseMin(p);
        g.aabb_hi = g.aabb_hi.cwiseMax(p);
      }
      g.aabb_lo.array() -= g.cloud->resolution / 2;
      g.aabb_hi.array() += g.cloud->resolution / 2;
    } else {
      if (!g.shape) return -1;
      g.shape->computeLocalAABB();
      g.aabb_lo = g.shape->aabb_local.min_;
      g.aabb_hi = g.shape->aabb_local.max_;
    }
  } catch (...) {
    return -1;
  }
  return guarded(k, [&]() -> int64_t {
    g.joint = joint;
    g.kind = kind;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) g.R_joint_geom(r, c) = placement[3 * r + c];
    g.t_joint_geom = Vec3s(placement[9], placement[10], placement[11]);
    g.center = (g.aabb_lo + g.aabb_hi) / 2;
    g.radius = (g.aabb_hi - g.aabb_lo).norm() / 2;
    g.world_vertices.resize(g.vertices.size());
    if (static_cast<int64_t>(k.joint_R.size()) <= joint) {
      k.joint_R.resize(joint + 1, nullptr);
      k.joint_t.resize(joint + 1, nullptr);
    }
    k.geoms.push_back(std::move(g));
    return static_cast<int64_t>(k.geoms.size()) - 1;
  });
}

// Drop the geometries from `count` on and every pair (the robot's geometries stay built).
void pdk_truncate(void* handle, int64_t count) {
  Kernel& k = *static_cast<Kernel*>(handle);
  if (count < static_cast<int64_t>(k.geoms.size())) k.geoms.resize(count);
  k.first.clear();
  k.second.clear();
  k.history_count[0] = k.history_count[1] = 0;  // pair indices of the new tables: no approach known yet
}

int64_t pdk_add_pair(void* handle, int64_t g1, int64_t g2) {
  Kernel& k = *static_cast<Kernel*>(handle);
  const int64_t n = static_cast<int64_t>(k.geoms.size());
  if (g1 < 0 || g2 < 0 || g1 >= n || g2 >= n) return -1;
  return guarded(k, [&]() -> int64_t {
    k.first.push_back(g1);
    k.second.push_back(g2);
    return static_cast<int64_t>(k.first.size()) - 1;
  });
}

// Where joint `joint`'s world placement is read: R column-major 3 x 3, t 3 (pinocchio's oMi views).
// Returns 0, or PDK_THREW.
int64_t pdk_set_joint(void* handle, int64_t joint, const double* R, const double* t) {
  Kernel& k = *static_cast<Kernel*>(handle);
  return guarded(k, [&]() -> int64_t {
    if (static_cast<int64_t>(k.joint_R.size()) <= joint) {
      k.joint_R.resize(joint + 1, nullptr);
      k.joint_t.resize(joint + 1, nullptr);
    }
    k.joint_R[joint] = R;
    k.joint_t[joint] = t;
    return 0;
  });
}

// The n closest pairs (distance, witness points, normal), sorted by distance; returns their count,
// or -1 if a joint carrying geometry has no placement pointer, or PDK_THREW.
int64_t pdk_closest(void* handle, int64_t n, double cutoff, int64_t* pair_out, double* distance_out, double* p1_out,
                    double* p2_out, double* normal_out) {
  Kernel& k = *static_cast<Kernel*>(handle);
  return guarded(k, [&]() -> int64_t {
    for (Geometry& g : k.geoms) {
      if (k.joint_R[g.joint] == nullptr) return -1;
      place(k, g);
    }
    const int64_t npairs = static_cast<int64_t>(k.first.size());
    k.bound.resize(npairs);
    k.order.clear();
    for (int64_t p = 0; p < npairs; ++p) {
      k.bound[p] = lower_bound(k.geoms[k.first[p]], k.geoms[k.second[p]]);
      if (k.bound[p] <= cutoff) k.order.push_back(p);
    }
    std::sort(k.order.begin(), k.order.end(),
              [&k](int64_t a, int64_t b) { return k.bound[a] < k.bound[b] || (k.bound[a] == k.bound[b] && a < b); });
    k.found.clear();
    k.narrow_calls = 0;
    double worst = std::numeric_limits<double>::infinity();
    for (int64_t p : k.order) {
      if (k.bound[p] >= worst) break;  // neither this pair nor any later one can be closer than the n found
      Found entry{0.0, p, Vec3s::Zero(), Vec3s::Zero(), Vec3s::Zero()};
      ++k.narrow_calls;
      if (!pair_distance(k, k.geoms[k.first[p]], k.geoms[k.second[p]], worst, entry.distance, entry.p1, entry.p2,
                         entry.normal))
        continue;  // a cloud with no cube closer than the n found
      const double d = entry.distance;
      if (static_cast<int64_t>(k.found.size()) < n) {
        k.found.push_back(entry);
        if (static_cast<int64_t>(k.found.size()) == n) worst = std::max_element(k.found.begin(), k.found.end())->distance;
      } else if (d < worst) {
        *std::max_element(k.found.begin(), k.found.end()) = entry;
        worst = std::max_element(k.found.begin(), k.found.end())->distance;
      }
    }
    std::sort(k.found.begin(), k.found.end());
    const int64_t count = static_cast<int64_t>(k.found.size());
    for (int64_t row = 0; row < count; ++row) {
      const Found& f = k.found[row];
      const Vec3s nrm = unit_normal(f.distance, f.p1, f.p2, f.normal);
      pair_out[row] = f.pair;
      distance_out[row] = f.distance;
      for (int i = 0; i < 3; ++i) {
        p1_out[3 * row + i] = f.p1[i];
        p2_out[3 * row + i] = f.p2[i];
        normal_out[3 * row + i] = nrm[i];
      }
    }
    return count;
  });
}

int64_t pdk_narrow_calls(void* handle) { return static_cast<Kernel*>(handle)->narrow_calls; }

// The pairs a collision barrier with urgent pairs tracks at this update (CollisionBarrier._select_pairs' rule,
// which its Python path keeps for a build without this kernel): of the k candidates (sorted by distance), a
// candidate also among the m of the update before (before_pair / before_distance) gets
// approach = max(d_before - d, 0) [m per update], any other 0; then all k if k <= size, else the n closest and
// the size - n others of least urgency d - lookahead * approach (ties: the nearer candidate), in candidate
// order. Writes approach[:k], urgency[:k] and order[:k] (scratch), the candidates into write_pair /
// write_distance (the next update's "before"; distinct from before_*), the chosen ones into out_* (pair,
// distance, the two witness points and the normal, 3 per row); returns their count. No allocation, no throw.
int64_t pdk_select_tracked(int64_t k, const int64_t* cand_pair, const double* cand_distance, const double* cand_p1,
                           const double* cand_p2, const double* cand_normal, int64_t m, const int64_t* before_pair,
                           const double* before_distance, int64_t n, int64_t size, double lookahead, double* approach,
                           double* urgency, int64_t* order, int64_t* write_pair, double* write_distance,
                           int64_t* out_pair, double* out_distance, double* out_p1, double* out_p2,
                           double* out_normal) {
  for (int64_t i = 0; i < k; ++i) {
    approach[i] = 0.0;
    for (int64_t j = 0; j < m; ++j) {
      if (before_pair[j] == cand_pair[i]) {  // the first match, as numpy's argmax of the match row
        approach[i] = std::max(before_distance[j] - cand_distance[i], 0.0);
        break;
      }
    }
  }
  for (int64_t i = 0; i < k; ++i) {
    write_pair[i] = cand_pair[i];
    write_distance[i] = cand_distance[i];
  }
  int64_t count = k;
  if (k <= size) {
    for (int64_t i = 0; i < k; ++i) order[i] = i;
  } else {
    // the n closest, then the size - n least urgent-valued others: an insertion sort of candidates n..k-1 by
    // (urgency, index) (k is a few tens at most), the first size - n of them put back in candidate order
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    int64_t others = 0;
    for (int64_t i = n; i < k; ++i) {
      double u = approach[i] * -lookahead;  // the Python path's np.multiply(approach, -lookahead) ...
      u += cand_distance[i];                // ... += distance: the same roundings
      urgency[i] = u;
      int64_t at = n + others++;
      while (at > n && urgency[order[at - 1]] > u) {  // strictly greater: equal urgencies keep index order
        order[at] = order[at - 1];
        --at;
      }
      order[at] = i;
    }
    count = size;
    std::sort(order + n, order + size);
  }
  for (int64_t r = 0; r < count; ++r) {
    const int64_t c = order[r];
    out_pair[r] = cand_pair[c];
    out_distance[r] = cand_distance[c];
    for (int a = 0; a < 3; ++a) {
      out_p1[3 * r + a] = cand_p1[3 * c + a];
      out_p2[3 * r + a] = cand_p2[3 * c + a];
      out_normal[3 * r + a] = cand_normal[3 * c + a];
    }
  }
  return count;
}

// The rows of the pairs found by the last pdk_closest (count of them, arrays as it wrote them):
// up to rows_per_pair rows per pair (row 0: the witness points; then vertices within `margin` of
// the pair's distance, at least `spacing` from the points already used on the same geometry), at most
// max_rows in all. Per row: row_pair (index into the found pairs), a (on geometry 1), b (on geometry 2),
// normal, h = n.(b - a) - d_min, and jac (C order, max_rows x n_columns) = n^T (dp_b/dq - dp_a/dq) over
// the group's columns, from J (6 x nv, column-major world-frame joint Jacobians) and support
// (njoints x n_columns, 1 where a velocity moves the joint); measured = the row's pair's distance - d_min.
// Unused rows: h = measured = +inf, jac = 0.
int64_t pdk_rows(void* handle, int64_t count, const int64_t* pair, const double* distance, const double* p1,
                 const double* p2, const double* normal, int64_t rows_per_pair, double margin, double spacing,
                 double d_min, int64_t max_rows, const double* J, int64_t nv, const int64_t* columns,
                 int64_t n_columns, const double* support, int64_t* row_pair, double* a_out, double* b_out,
                 double* n_out, double* h_out, double* jac, double* measured_out) {
  Kernel& k = *static_cast<Kernel*>(handle);
  return guarded(k, [&]() -> int64_t {
    std::fill(jac, jac + max_rows * n_columns, 0.0);
    int64_t rows = 0;
    for (int64_t f = 0; f < count && rows < max_rows; ++f) {
      const Geometry& g1 = k.geoms[k.first[pair[f]]];
      const Geometry& g2 = k.geoms[k.second[pair[f]]];
      const Vec3s w1(p1 + 3 * f), w2(p2 + 3 * f), n(normal + 3 * f);
      // a row: points a (geometry 1) and b (geometry 2), its normal and value (the distance it bounds)
      auto emit = [&](const Vec3s& a, const Vec3s& b, const Vec3s& nr, double value) {
        row_pair[rows] = f;
        for (int i = 0; i < 3; ++i) {
          a_out[3 * rows + i] = a[i];
          b_out[3 * rows + i] = b[i];
          n_out[3 * rows + i] = nr[i];
        }
        h_out[rows] = value - d_min;
        measured_out[rows] = distance[f] - d_min;  // the row's pair's distance, what evaluate() gives at the next q
        double* row = jac + rows * n_columns;
        add_point_jacobian(J, nv, columns, n_columns, support + g2.joint * n_columns, b, nr, 1.0, row);
        add_point_jacobian(J, nv, columns, n_columns, support + g1.joint * n_columns, a, nr, -1.0, row);
        ++rows;
      };
      emit(w1, w2, n, distance[f]);
      if (rows_per_pair <= 1 || n.squaredNorm() == 0.0) continue;
      k.candidates.clear();
      const double limit = distance[f] + margin;
      int64_t extra = 0;
      // a cloud fixed in the world against a convex geometry, the pair within `margin` of d_min: the cubes nearest to
      // the witness's (nearest_cubes), exact rows of their own, up to half the extra rows; the link's vertices below
      // get the rest (each costs a GJK call: a pair farther above d_min keeps its witness and vertex rows only)
      const bool cloud1 = g1.cloud && g1.joint == 0 && g2.convex(), cloud2 = g2.cloud && g2.joint == 0 && g1.convex();
      if ((cloud1 || cloud2) && distance[f] - d_min <= margin) {
        nearest_cubes(k, cloud2 ? g1 : g2, cloud2 ? g2 : g1, cloud2 ? n : Vec3s(-n), cloud2 ? w2 : w1, distance[f], limit,
                      rows_per_pair / 2);
        for (const CubeRow& c : k.cube_rows) {
          if (rows >= max_rows) break;
          if (cloud2) emit(c.p_shape, c.p_cube, c.normal, c.distance);
          else emit(c.p_cube, c.p_shape, Vec3s(-c.normal), c.distance);
          ++extra;
        }
      }
      // a vertex v of geometry 1 is at least n.(p2 - v) from geometry 2, a vertex w of geometry 2 at least
      // n.(w - p1) from geometry 1, if that other geometry is convex (it lies beyond the plane through its
      // witness point): value = m.(v - q) with m = -n, q = p2 (side 0) or m = n, q = p1 (side 1). Against a
      // point cloud the same value takes the cloud locally as that plane (exact for a flat wall of cells; one
      // witness row alone lets a flat face turn its far corners into the wall). A geometry fixed in the world
      // (a table, a wall, the perceived cloud) gets no rows of its own: its vertex does not move, so the row's
      // Jacobian is the witness row's (the other geometry's witness point) with a looser bound; rows that only
      // repeat it took the pair's row budget from the moving link's own vertices (a forearm flat on a table:
      // the table's four top corners tied with it, and its far end, unconstrained, dipped 3.8 mm inside d_min).
      for (int side = 0; side < 2; ++side) {
        const Geometry& g = side == 0 ? g1 : g2;
        const Geometry& other = side == 0 ? g2 : g1;
        if ((!other.convex() && !other.cloud) || g.joint == 0) continue;
        const Vec3s m = side == 0 ? Vec3s(-n) : n;
        const Vec3s& q = side == 0 ? w2 : w1;
        if (g.cloud) {
          if (other.convex()) cloud_candidates(k, g, other, m, q, distance[f] - kCloudRowSlack, limit, side);
          continue;
        }
        if (end_points(g, side == 0 ? n : Vec3s(-n), k.ends[side][0], k.ends[side][1])) {
          for (int64_t i = 0; i < 2; ++i) {
            const double value = m.dot(k.ends[side][i] - q);
            if (value <= limit) k.candidates.push_back({std::floor(value * kRowOrderSteps), side, i});
          }
          continue;
        }
        // a mesh's vertex (not convex: it may lie before the plane through its own witness point) only at or
        // beyond the pair's distance: never a row more violated than the witness row
        const double floor = g.convex() ? -std::numeric_limits<double>::infinity() : distance[f] - kCloudRowSlack;
        // value = m.(R v_local + t - q): one dot product per vertex with m in the geometry's frame (R^T m), not a
        // transform to the world each (the chosen ones are transformed below, their rows from world points)
        const Vec3s m_local = g.T_world_geom.getRotation().transpose() * m;
        const double offset = m.dot(g.T_world_geom.getTranslation() - q);
        for (size_t i = 0; i < g.vertices.size(); ++i) {
          const double value = m_local.dot(g.vertices[i]) + offset;
          if (value <= limit && value >= floor)
            k.candidates.push_back({std::floor(value * kRowOrderSteps), side, static_cast<int64_t>(i)});
        }
      }
      std::sort(k.candidates.begin(), k.candidates.end());
      k.chosen[0].assign(1, w1);
      k.chosen[1].assign(1, w2);
      for (const Candidate& c : k.candidates) {
        if (extra + 1 >= rows_per_pair || rows >= max_rows) break;
        const Geometry& g = c.side == 0 ? g1 : g2;
        const Vec3s v = g.cloud ? cloud_vertex_at(g, g.cloud->points[g.cloud->position[c.index]], c.side == 0 ? Vec3s(-n) : n)
                        : (g.kind == CYLINDER || g.kind == CAPSULE) ? k.ends[c.side][c.index]
                                                                    : g.T_world_geom.transform(g.vertices[c.index]);
        if (!far_from(k.chosen[c.side], v, spacing)) continue;
        k.chosen[c.side].push_back(v);
        if (c.side == 0) emit(v, w2, n, n.dot(w2 - v)); else emit(w1, v, n, n.dot(v - w1));
        ++extra;
      }
    }
    for (int64_t r = rows; r < max_rows; ++r) {
      h_out[r] = measured_out[r] = std::numeric_limits<double>::infinity();
      row_pair[r] = -1;
    }
    return rows;
  });
}

// Signed distances of the given pairs at the current placements (after a new forward kinematics).
int64_t pdk_distances(void* handle, int64_t count, const int64_t* pairs, double* distance_out) {
  Kernel& k = *static_cast<Kernel*>(handle);
  return guarded(k, [&]() -> int64_t {
    for (Geometry& g : k.geoms) {
      if (k.joint_R[g.joint] == nullptr) return -1;
      place(k, g);
    }
    const double inf = std::numeric_limits<double>::infinity();
    Vec3s p1, p2, normal;
    for (int64_t i = 0; i < count; ++i) {
      distance_out[i] = inf;
      pair_distance(k, k.geoms[k.first[pairs[i]]], k.geoms[k.second[pairs[i]]], inf, distance_out[i], p1, p2, normal);
    }
    return count;
  });
}

// A collision barrier's update in one call (CollisionBarrier.update's compiled path: what pdk_closest,
// pdk_select_tracked and pdk_rows give called one after the other, with its history of candidates kept here): the
// tracked pairs at s->q into s->tracked_* (urgent 0: the n closest; else the n_candidates closest into s->cand_*, then
// pdk_select_tracked's choice with each candidate's approach since the update before, or since the one before that
// for a second update at the same q: a re-solve), then their rows. Writes s->cand_count, s->tracked_count and
// s->row_count; returns the row count, -1 if a joint carrying geometry has no placement pointer, or PDK_THREW.
int64_t pdk_barrier_update(void* handle, pdk_barrier_step* s) {
  const double* q = s->q;
  Kernel& k = *static_cast<Kernel*>(handle);
  if (s->urgent == 0) {
    const int64_t count = pdk_closest(handle, s->n, s->cutoff, s->tracked_pair, s->tracked_distance, s->tracked_p1,
                                      s->tracked_p2, s->tracked_normal);
    if (count < 0) return count;
    s->cand_count = s->tracked_count = count;
  } else {
    const int64_t count = pdk_closest(handle, s->n_candidates, s->cutoff, s->cand_pair, s->cand_distance, s->cand_p1,
                                      s->cand_p2, s->cand_normal);
    if (count < 0) return count;
    s->cand_count = count;
    const int64_t status = guarded(k, [&]() -> int64_t {
      const size_t nq = static_cast<size_t>(s->nq);
      if (k.history_q.size() != nq) k.history_q.assign(nq, std::numeric_limits<double>::quiet_NaN());
      for (int slot = 0; slot < 2; ++slot) {
        if (static_cast<int64_t>(k.history_pair[slot].size()) < s->n_candidates) {
          k.history_pair[slot].resize(s->n_candidates, -1);
          k.history_distance[slot].resize(s->n_candidates, 0.0);
        }
      }
      // the same bytes as the last update's q: a re-solve, whose approach is measured against the update before
      // that (kept); else the last update's candidates become the kept ones
      if (std::memcmp(k.history_q.data(), q, nq * sizeof(double)) != 0) {
        k.written ^= 1;
        std::memcpy(k.history_q.data(), q, nq * sizeof(double));
      }
      const int kept = k.written ^ 1;
      s->tracked_count = pdk_select_tracked(
          count, s->cand_pair, s->cand_distance, s->cand_p1, s->cand_p2, s->cand_normal, k.history_count[kept],
          k.history_pair[kept].data(), k.history_distance[kept].data(), s->n, s->size, s->lookahead, s->approach,
          s->urgency, s->order, k.history_pair[k.written].data(), k.history_distance[k.written].data(),
          s->tracked_pair, s->tracked_distance, s->tracked_p1, s->tracked_p2, s->tracked_normal);
      k.history_count[k.written] = count;
      return 0;
    });
    if (status < 0) return status;
  }
  const int64_t rows = pdk_rows(handle, s->tracked_count, s->tracked_pair, s->tracked_distance, s->tracked_p1,
                                s->tracked_p2, s->tracked_normal, s->rows_per_pair, s->margin, s->spacing, s->d_min,
                                s->max_rows, s->J, s->nv, s->columns, s->n_columns, s->support, s->row_pair, s->a,
                                s->b, s->normal, s->h, s->jacobian, s->measured);
  if (rows >= 0) s->row_count = rows;
  return rows;
}

// A collision barrier's evaluate in one call (CollisionBarrier.evaluate's compiled path: pdk_closest within d_min
// and pdk_distances of the tracked pairs, one placement for both), at the placements pinocchio's Data holds now:
// s->untracked_h = the distance - d_min of the nearest of the n closest pairs within d_min that is not among the
// tracked_count tracked ones (inf: none); then, if row_count > 0, each tracked pair's distance into
// s->distance_next and each row's h (its pair's distance - d_min) into s->h_next[:row_count]; h_next is inf beyond.
// Returns 0, -1 if a joint carrying geometry has no placement pointer, or PDK_THREW.
int64_t pdk_barrier_evaluate(void* handle, pdk_barrier_step* s, int64_t tracked_count, int64_t row_count) {
  Kernel& k = *static_cast<Kernel*>(handle);
  const double inf = std::numeric_limits<double>::infinity();
  std::fill(s->h_next, s->h_next + s->max_rows, inf);
  const int64_t status = guarded(k, [&]() -> int64_t {
    if (static_cast<int64_t>(k.next_pair.size()) < s->n) {
      k.next_pair.resize(s->n);
      k.next_distance.resize(s->n);
      k.next_points.resize(9 * s->n);
    }
    return 0;
  });
  if (status < 0) return status;
  double* points = k.next_points.data();
  const int64_t count = pdk_closest(handle, s->n, s->d_min, k.next_pair.data(), k.next_distance.data(), points,
                                    points + 3 * s->n, points + 6 * s->n);  // places every geometry
  if (count < 0) return count;
  s->untracked_h = inf;
  for (int64_t i = 0; i < count; ++i) {  // sorted by distance: the first untracked one is the least
    const int64_t* begin = s->tracked_pair;
    const int64_t* end = begin + tracked_count;
    if (std::find(begin, end, k.next_pair[i]) == end) {
      s->untracked_h = k.next_distance[i] - s->d_min;
      break;
    }
  }
  if (row_count <= 0) return 0;
  return guarded(k, [&]() -> int64_t {
    Vec3s p1, p2, normal;
    for (int64_t i = 0; i < tracked_count; ++i) {
      const int64_t p = s->tracked_pair[i];
      s->distance_next[i] = inf;
      pair_distance(k, k.geoms[k.first[p]], k.geoms[k.second[p]], inf, s->distance_next[i], p1, p2, normal);
    }
    for (int64_t r = 0; r < row_count; ++r) s->h_next[r] = s->distance_next[s->row_pair[r]] - s->d_min;
    return 0;
  });
}

}  // extern "C"
