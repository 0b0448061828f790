// Collision pair distances and the collision barrier's rows in one compiled call (loaded with ctypes
// by core/model/compiled_pairs.py; a plain shared library with a C API, linked against coal).
//
// A kernel holds its own copy of the geometries of a pair set (built once from their parameters:
// coal's shapes, convex hulls of the same points, octrees of the same points), the pairs, and
// pointers to pinocchio's Data: the joint placements oMi[j] (rotation column-major, translation) and
// the world-frame joint Jacobians data.J (6 x nv, column-major), read in place at every call.
//
// One call (pdk_rows) per step:
//   1. geometry placements T_world_geom = oMi[joint] * placement;
//   2. broad phase: a lower bound of each pair's distance (bounding spheres; a geometry fixed in the
//      world: the moving sphere against its box), pairs above `cutoff` never evaluated;
//   3. narrow phase: coal's distance (GJK/EPA, no guess kept from an earlier call: same input, same
//      result) in increasing lower bound until no remaining pair can be among the n closest;
//   4. rows: per close pair, its witness row (p1, p2, n) and up to rows_per_pair - 1 rows for other
//      vertices of either geometry within `margin` of the closest distance (module docstring of
//      compiled_pairs.py; each is a lower bound of that vertex's distance, so never more than the
//      pair's own);
//   5. each row's h = n.(b - a) - d_min and dh/dq = n^T (dp_b/dq - dp_a/dq) over the group's columns.
// The Python path (closest_pairs.py, witness_rows.py) computes the same rows with the same rules.
#include <coal/BVH/BVH_model.h>
#include <coal/distance.h>
#include <coal/octree.h>
#include <coal/shape/convex.h>
#include <coal/shape/geometric_shapes.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

namespace {

using coal::Matrix3s;
using coal::Transform3s;
using coal::Vec3s;

enum ShapeKind : int64_t { BOX = 1, SPHERE = 2, CYLINDER = 3, CAPSULE = 4, CONVEX = 5, MESH = 6, OCTREE = 7 };

struct Geometry {
  std::shared_ptr<coal::CollisionGeometry> shape;
  int64_t kind = 0;           // ShapeKind
  int64_t joint = 0;          // model joint whose placement carries it (0: fixed in the world)
  Matrix3s R_joint_geom;      // placement in the joint frame
  Vec3s t_joint_geom;
  Vec3s center;               // bounding sphere centre, geometry frame [m]
  double radius = 0.0;        // bounding sphere radius [m]
  Vec3s aabb_lo, aabb_hi;     // local AABB, geometry frame [m]
  std::vector<Vec3s> vertices;  // geometry frame [m]: candidates for extra rows (convex hulls, boxes)
  Transform3s T_world_geom;   // this call's placement
  std::vector<Vec3s> world_vertices;
};

struct Found {
  double distance;
  int64_t pair;
  Vec3s p1, p2, normal;  // witness points (world) and coal's normal
  bool operator<(const Found& o) const { return distance < o.distance || (distance == o.distance && pair < o.pair); }
};

// Candidates are ordered by their bound in steps of 1 nm, then side, then index: vertices of a face
// parallel to the other geometry tie, and their bounds differ only by rounding (which differs between
// this kernel and the Python path's numpy); exact doubles would order them by that noise.
constexpr double kRowOrderSteps = 1e9;  // [1/m]; collision_rows.py: ROW_ORDER_STEPS

struct Candidate {
  double key;    // floor(lower bound of the vertex's distance [m] * kRowOrderSteps)
  int side;      // 0: vertex on geometry 1, 1: on geometry 2
  int64_t index;
  bool operator<(const Candidate& o) const {
    return key < o.key || (key == o.key && (side < o.side || (side == o.side && index < o.index)));
  }
};

struct Kernel {
  std::vector<Geometry> geoms;
  std::vector<int64_t> first, second;   // geometry indices of each pair
  std::vector<const double*> joint_R;   // per model joint: oMi[j].rotation (column-major), or null
  std::vector<const double*> joint_t;
  coal::DistanceRequest request;
  // scratch, reused
  std::vector<double> bound;
  std::vector<int64_t> order;
  std::vector<Found> found;
  std::vector<Candidate> candidates;
  std::vector<Vec3s> chosen[2];
  int64_t narrow_calls = 0;

  explicit Kernel(double tolerance) : request(true) {
    request.gjk_tolerance = tolerance;
    request.enable_signed_distance = true;
  }
};

void place(Kernel& k, Geometry& g) {
  const double* R = k.joint_R[g.joint];
  const double* t = k.joint_t[g.joint];
  Matrix3s R_world_joint;
  for (int c = 0; c < 3; ++c)
    for (int r = 0; r < 3; ++r) R_world_joint(r, c) = R[3 * c + r];
  const Vec3s t_world_joint(t[0], t[1], t[2]);
  g.T_world_geom.setRotation(R_world_joint * g.R_joint_geom);
  g.T_world_geom.setTranslation(R_world_joint * g.t_joint_geom + t_world_joint);
}

double lower_bound(const Geometry& a, const Geometry& b) {
  const Geometry* fixed = a.joint == 0 ? &a : (b.joint == 0 ? &b : nullptr);
  if (fixed != nullptr) {  // the moving sphere's centre in the fixed geometry's frame, to its box
    const Geometry& moving = fixed == &a ? b : a;
    const Vec3s c_world = moving.T_world_geom.transform(moving.center);
    const Vec3s c = fixed->T_world_geom.inverseTransform(c_world);
    const Vec3s outside = (fixed->aabb_lo - c).cwiseMax(c - fixed->aabb_hi).cwiseMax(0.0);
    return outside.norm() - moving.radius;
  }
  const Vec3s ca = a.T_world_geom.transform(a.center), cb = b.T_world_geom.transform(b.center);
  return (ca - cb).norm() - a.radius - b.radius;
}

// Unit vector along which the distance grows when geometry 2 moves (0 if undefined), as
// closest_pairs._unit_normal.
Vec3s unit_normal(double d, const Vec3s& p1, const Vec3s& p2, const Vec3s& coal_normal) {
  const Vec3s delta = p2 - p1;
  const double norm = delta.norm();
  if (d > 0 && norm > 1e-9) return delta / norm;
  if (d <= 0 && std::abs(coal_normal.norm() - 1.0) < 1e-6) return coal_normal;
  return Vec3s::Zero();
}

bool far_from(const std::vector<Vec3s>& points, const Vec3s& p, double spacing) {
  for (const Vec3s& q : points)
    if ((q - p).squaredNorm() < spacing * spacing) return false;
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

}  // namespace

extern "C" {

void* pdk_new(double gjk_tolerance) {
  try {
    return new Kernel(gjk_tolerance);
  } catch (...) {
    return nullptr;
  }
}

void pdk_free(void* handle) { delete static_cast<Kernel*>(handle); }

// Add a geometry; returns its index, or -1 (unknown kind, bad parameters, or coal refused it).
// params: BOX (x, y, z full sizes), SPHERE (r), CYLINDER (r, length), CAPSULE (r, length),
// OCTREE (resolution); points (n, 3) row-major: CONVEX (its hull is taken), MESH (vertices), OCTREE (cells'
// points); triangles (m, 3): MESH. placement: R (3 x 3 row-major) then t, in the joint frame.
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
      case SPHERE: g.shape = std::make_shared<coal::Sphere>(params[0]); break;
      case CYLINDER: g.shape = std::make_shared<coal::Cylinder>(params[0], params[1]); break;
      case CAPSULE: g.shape = std::make_shared<coal::Capsule>(params[0], params[1]); break;
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
        break;
      }
      case OCTREE: {
        if (n_points < 1 || !(params[0] > 0)) return -1;
        Eigen::Matrix<double, Eigen::Dynamic, 3> cloud(n_points, 3);
        for (int64_t i = 0; i < n_points; ++i) cloud.row(i) << points[3 * i], points[3 * i + 1], points[3 * i + 2];
        g.shape = coal::makeOctree(cloud, params[0]);
        break;
      }
      default: return -1;
    }
    if (!g.shape) return -1;
    g.shape->computeLocalAABB();
  } catch (...) {
    return -1;
  }
  g.joint = joint;
  g.kind = kind;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) g.R_joint_geom(r, c) = placement[3 * r + c];
  g.t_joint_geom = Vec3s(placement[9], placement[10], placement[11]);
  g.aabb_lo = g.shape->aabb_local.min_;
  g.aabb_hi = g.shape->aabb_local.max_;
  g.center = (g.aabb_lo + g.aabb_hi) / 2;
  g.radius = (g.aabb_hi - g.aabb_lo).norm() / 2;
  g.world_vertices.resize(g.vertices.size());
  if (static_cast<int64_t>(k.joint_R.size()) <= joint) {
    k.joint_R.resize(joint + 1, nullptr);
    k.joint_t.resize(joint + 1, nullptr);
  }
  k.geoms.push_back(std::move(g));
  return static_cast<int64_t>(k.geoms.size()) - 1;
}

// Drop the geometries from `count` on and every pair (the robot's geometries stay built).
void pdk_truncate(void* handle, int64_t count) {
  Kernel& k = *static_cast<Kernel*>(handle);
  if (count < static_cast<int64_t>(k.geoms.size())) k.geoms.resize(count);
  k.first.clear();
  k.second.clear();
}

int64_t pdk_add_pair(void* handle, int64_t g1, int64_t g2) {
  Kernel& k = *static_cast<Kernel*>(handle);
  const int64_t n = static_cast<int64_t>(k.geoms.size());
  if (g1 < 0 || g2 < 0 || g1 >= n || g2 >= n) return -1;
  k.first.push_back(g1);
  k.second.push_back(g2);
  return static_cast<int64_t>(k.first.size()) - 1;
}

// Where joint `joint`'s world placement is read: R column-major 3 x 3, t 3 (pinocchio's oMi views).
void pdk_set_joint(void* handle, int64_t joint, const double* R, const double* t) {
  Kernel& k = *static_cast<Kernel*>(handle);
  if (static_cast<int64_t>(k.joint_R.size()) <= joint) {
    k.joint_R.resize(joint + 1, nullptr);
    k.joint_t.resize(joint + 1, nullptr);
  }
  k.joint_R[joint] = R;
  k.joint_t[joint] = t;
}

// The n closest pairs (distance, witness points, normal), sorted by distance; returns their count,
// or -1 if a joint carrying geometry has no placement pointer.
int64_t pdk_closest(void* handle, int64_t n, double cutoff, int64_t* pair_out, double* distance_out, double* p1_out,
                    double* p2_out, double* normal_out) {
  Kernel& k = *static_cast<Kernel*>(handle);
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
  coal::DistanceResult res;
  for (int64_t p : k.order) {
    if (k.bound[p] >= worst) break;  // neither this pair nor any later one can be closer than the n found
    const Geometry& a = k.geoms[k.first[p]];
    const Geometry& b = k.geoms[k.second[p]];
    res.clear();
    coal::distance(a.shape.get(), a.T_world_geom, b.shape.get(), b.T_world_geom, k.request, res);
    ++k.narrow_calls;
    const double d = res.min_distance;
    Found entry{d, p, res.nearest_points[0], res.nearest_points[1], res.normal};
    if (b.kind == OCTREE && a.kind != OCTREE) {  // coal (3.0) gives a shape-octree pair's witness points swapped
      std::swap(entry.p1, entry.p2);
      entry.normal = -entry.normal;
    }
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
}

int64_t pdk_narrow_calls(void* handle) { return static_cast<Kernel*>(handle)->narrow_calls; }

// The rows of the pairs found by the last pdk_closest (count of them, arrays as it wrote them):
// up to rows_per_pair rows per pair (row 0: the witness points; then vertices within `margin` of
// the pair's distance, at least `spacing` from the points already used on the same geometry), at most
// max_rows in all. Per row: row_pair (index into the found pairs), a (on geometry 1), b (on geometry 2),
// normal, h = n.(b - a) - d_min, and jac (C order, max_rows x n_columns) = n^T (dp_b/dq - dp_a/dq) over
// the group's columns, from J (6 x nv, column-major world-frame joint Jacobians) and support
// (njoints x n_columns, 1 where a velocity moves the joint). Unused rows: h = +inf, jac = 0.
int64_t pdk_rows(void* handle, int64_t count, const int64_t* pair, const double* distance, const double* p1,
                 const double* p2, const double* normal, int64_t rows_per_pair, double margin, double spacing,
                 double d_min, int64_t max_rows, const double* J, int64_t nv, const int64_t* columns,
                 int64_t n_columns, const double* support, int64_t* row_pair, double* a_out, double* b_out,
                 double* n_out, double* h_out, double* jac) {
  Kernel& k = *static_cast<Kernel*>(handle);
  std::fill(jac, jac + max_rows * n_columns, 0.0);
  int64_t rows = 0;
  for (int64_t f = 0; f < count && rows < max_rows; ++f) {
    const Geometry& g1 = k.geoms[k.first[pair[f]]];
    const Geometry& g2 = k.geoms[k.second[pair[f]]];
    const Vec3s w1(p1 + 3 * f), w2(p2 + 3 * f), n(normal + 3 * f);
    auto emit = [&](const Vec3s& a, const Vec3s& b, bool witness) {
      row_pair[rows] = f;
      for (int i = 0; i < 3; ++i) {
        a_out[3 * rows + i] = a[i];
        b_out[3 * rows + i] = b[i];
        n_out[3 * rows + i] = n[i];
      }
      h_out[rows] = (witness ? distance[f] : n.dot(b - a)) - d_min;
      double* row = jac + rows * n_columns;
      add_point_jacobian(J, nv, columns, n_columns, support + g2.joint * n_columns, b, n, 1.0, row);
      add_point_jacobian(J, nv, columns, n_columns, support + g1.joint * n_columns, a, n, -1.0, row);
      ++rows;
    };
    emit(w1, w2, true);
    if (rows_per_pair <= 1 || n.squaredNorm() == 0.0) continue;
    k.candidates.clear();
    const double limit = distance[f] + margin;
    for (size_t i = 0; i < g1.vertices.size(); ++i) {  // a vertex v of geometry 1: distance >= n.(p2 - v)
      const Vec3s v = g1.T_world_geom.transform(g1.vertices[i]);
      const double value = n.dot(w2 - v);
      if (value <= limit) k.candidates.push_back({std::floor(value * kRowOrderSteps), 0, static_cast<int64_t>(i)});
    }
    for (size_t i = 0; i < g2.vertices.size(); ++i) {  // a vertex w of geometry 2: distance >= n.(w - p1)
      const Vec3s w = g2.T_world_geom.transform(g2.vertices[i]);
      const double value = n.dot(w - w1);
      if (value <= limit) k.candidates.push_back({std::floor(value * kRowOrderSteps), 1, static_cast<int64_t>(i)});
    }
    std::sort(k.candidates.begin(), k.candidates.end());
    k.chosen[0].assign(1, w1);
    k.chosen[1].assign(1, w2);
    int64_t extra = 0;
    for (const Candidate& c : k.candidates) {
      if (extra + 1 >= rows_per_pair || rows >= max_rows) break;
      const Geometry& g = c.side == 0 ? g1 : g2;
      const Vec3s v = g.T_world_geom.transform(g.vertices[c.index]);
      if (!far_from(k.chosen[c.side], v, spacing)) continue;
      k.chosen[c.side].push_back(v);
      if (c.side == 0) emit(v, w2, false); else emit(w1, v, false);
      ++extra;
    }
  }
  for (int64_t r = rows; r < max_rows; ++r) {
    h_out[r] = std::numeric_limits<double>::infinity();
    row_pair[r] = -1;
  }
  return rows;
}

// Signed distances of the given pairs at the current placements (after a new forward kinematics).
int64_t pdk_distances(void* handle, int64_t count, const int64_t* pairs, double* distance_out) {
  Kernel& k = *static_cast<Kernel*>(handle);
  for (Geometry& g : k.geoms) {
    if (k.joint_R[g.joint] == nullptr) return -1;
    place(k, g);
  }
  coal::DistanceResult res;
  for (int64_t i = 0; i < count; ++i) {
    const Geometry& a = k.geoms[k.first[pairs[i]]];
    const Geometry& b = k.geoms[k.second[pairs[i]]];
    res.clear();
    distance_out[i] = coal::distance(a.shape.get(), a.T_world_geom, b.shape.get(), b.T_world_geom, k.request, res);
  }
  return count;
}

}  // extern "C"
