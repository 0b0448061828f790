// Collision pair distances and the collision barrier's rows in one compiled call (loaded with ctypes
// by core/model/compiled_pairs.py; a plain shared library with a C API, linked against coal).
//
// A kernel holds its own copy of the geometries of a pair set (built once from their parameters:
// coal's shapes, convex hulls of the same points, point clouds of the same cells), the pairs, and
// pointers to pinocchio's Data: the joint placements oMi[j] (rotation column-major, translation) and
// the world-frame joint Jacobians data.J (6 x nv, column-major), read in place at every call.
//
// One call (pdk_rows) per step:
//   1. geometry placements T_world_geom = oMi[joint] * placement;
//   2. broad phase: a lower bound of each pair's distance (bounding spheres; a geometry fixed in the
//      world: the moving sphere against its box), pairs above `cutoff` never evaluated;
//   3. narrow phase: coal's distance (GJK/EPA, no guess kept from an earlier call: same input, same
//      result) in increasing lower bound until no remaining pair can be among the n closest; a point
//      cloud (an octree's occupied cells) has its own exact narrow phase (cloud_distance below);
//   4. rows: per close pair, its witness row (p1, p2, n) and up to rows_per_pair - 1 rows for other
//      vertices of either geometry within `margin` of the closest distance (module docstring of
//      compiled_pairs.py; each is a lower bound of that vertex's distance, so never more than the
//      pair's own): a vertex of one geometry only when the other is convex, or a point cloud taken
//      locally as the plane through its witness point (a flat link face against a wall of cells);
//   5. each row's h = n.(b - a) - d_min and dh/dq = n^T (dp_b/dq - dp_a/dq) over the group's columns.
// The Python path (closest_pairs.py, witness_rows.py) computes the same rows with the same rules.
#include <coal/BVH/BVH_model.h>
#include <coal/distance.h>
#include <coal/shape/convex.h>
#include <coal/shape/geometric_shapes.h>

#include <algorithm>
#include <array>
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

// A point cloud: occupied cells, each an axis-aligned cube of side `resolution` (geometry frame) centred
// at its point, as coal's octree leaves; the distance to it is the least distance to any cube.
// Its points are binned in a uniform grid of `grid` cells: a query visits the grid cells in increasing
// lower bound and calls coal (the geometry against one cube) only for points whose own lower bound is
// below the least distance found so far. Exact: the same minimum as over every cube.
struct Cloud {
  double resolution = 0.0;
  double grid = 0.0;               // [m] grid cell size
  std::vector<Vec3s> points;       // geometry frame, grouped by grid cell
  std::vector<int64_t> index;      // each point's index in the input (the order of candidates' ties)
  std::vector<int64_t> position;   // input index -> its place in points
  struct Cell {
    Vec3s center, half;            // box of the cell's cubes (geometry frame)
    int64_t begin, end;            // its points: points[begin:end]
  };
  std::vector<Cell> cells;         // non-empty grid cells
  std::shared_ptr<coal::Box> cube;
};

struct Geometry {
  std::shared_ptr<coal::CollisionGeometry> shape;  // null for a point cloud
  std::shared_ptr<Cloud> cloud;                    // OCTREE: the cells, our narrow phase
  int64_t kind = 0;           // ShapeKind
  int64_t joint = 0;          // model joint whose placement carries it (0: fixed in the world)
  Matrix3s R_joint_geom;      // placement in the joint frame
  Vec3s t_joint_geom;
  Vec3s center;               // bounding sphere centre, geometry frame [m]
  double radius = 0.0;        // bounding sphere radius [m]
  Vec3s aabb_lo, aabb_hi;     // local AABB, geometry frame [m]
  std::vector<Vec3s> vertices;  // geometry frame [m]: candidates for extra rows (convex hulls, boxes, meshes)
  Transform3s T_world_geom;   // this call's placement
  std::vector<Vec3s> world_vertices;
  double round_radius = 0.0, half_length = 0.0;  // SPHERE, CAPSULE, CYLINDER: for support()
  bool convex() const { return kind >= BOX && kind <= CONVEX; }
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
// A cylinder whose axis is within this (sine) of u has its cap facing u: the cap's centre is its end point
constexpr double kFlatEnd = 1e-9;  // collision_rows.py: FLAT_END

struct Candidate {
  double key;    // floor(lower bound of the vertex's distance [m] * kRowOrderSteps)
  int side;      // 0: vertex on geometry 1, 1: on geometry 2
  int64_t index;
  bool operator<(const Candidate& o) const {
    return key < o.key || (key == o.key && (side < o.side || (side == o.side && index < o.index)));
  }
};

// A row of a cloud's cube against a shape (nearest_cubes): witness points, unit normal from the shape, distance.
struct CubeRow {
  Vec3s p_shape, p_cube, normal;
  double distance;
  int64_t index;  // the cube's point's input index (ties)
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
  Vec3s ends[2][2];  // per side: a cylinder's or capsule's end points (end_points) of the current pair
  std::vector<std::pair<double, int64_t>> cube_order;  // nearest_cubes: (key, point) of the cubes near a shape
  std::vector<CubeRow> cube_rows;                      // nearest_cubes' rows
  std::vector<std::pair<double, int64_t>> cell_order;  // cloud queries: (bound, cell)
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
// closest_pairs.unit_normal.
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

// The cloud of `points` (n, 3 row-major, geometry frame): points grouped by grid cell, the cells' boxes;
// null for a non-finite point or a non-positive size.
std::shared_ptr<Cloud> make_cloud(const double* points, int64_t n, double resolution, double grid) {
  if (n < 1 || !(resolution > 0) || !std::isfinite(resolution)) return nullptr;
  auto c = std::make_shared<Cloud>();
  c->resolution = resolution;
  c->grid = grid > 0 && std::isfinite(grid) ? std::max(grid, resolution) : 5.0 * resolution;
  Vec3s lo = Vec3s::Constant(std::numeric_limits<double>::infinity()), hi = -lo;
  std::vector<Vec3s> input(n);
  for (int64_t i = 0; i < n; ++i) {
    input[i] = Vec3s(points[3 * i], points[3 * i + 1], points[3 * i + 2]);
    if (!input[i].allFinite()) return nullptr;
    lo = lo.cwiseMin(input[i]);
    hi = hi.cwiseMax(input[i]);
  }
  std::vector<std::array<int64_t, 3>> key(n);
  for (int64_t i = 0; i < n; ++i)
    for (int a = 0; a < 3; ++a) key[i][a] = static_cast<int64_t>(std::floor((input[i][a] - lo[a]) / c->grid));
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&key](int64_t a, int64_t b) { return key[a] < key[b] || (key[a] == key[b] && a < b); });
  const double half = resolution / 2;
  for (int64_t s = 0; s < n;) {
    int64_t e = s;
    Vec3s cl = input[order[s]], ch = cl;
    while (e < n && key[order[e]] == key[order[s]]) {
      c->points.push_back(input[order[e]]);
      c->index.push_back(order[e]);
      cl = cl.cwiseMin(input[order[e]]);
      ch = ch.cwiseMax(input[order[e]]);
      ++e;
    }
    c->cells.push_back({(cl + ch) / 2, (ch - cl) / 2 + Vec3s::Constant(half), s, e});
    s = e;
  }
  c->position.resize(n);
  for (int64_t i = 0; i < n; ++i) c->position[c->index[i]] = i;
  c->cube = std::make_shared<coal::Box>(resolution, resolution, resolution);
  return c;
}

// A lower bound of the distance from a box of half-extents e (axes of geometry `g`'s frame) centred at x
// (geometry frame) to geometry g (inside its local AABB): -inf where they overlap (no bound of a penetration).
inline double box_aabb_bound(const Geometry& g, const Vec3s& x, const Vec3s& e) {
  const Vec3s out = (g.aabb_lo - e - x).cwiseMax(x - g.aabb_hi - e);
  if (out.maxCoeff() <= 0.0) return -std::numeric_limits<double>::infinity();
  return out.cwiseMax(0.0).norm();
}

// A cloud placed against a shape: the shape's frame seen from the cloud's (x_shape = Rt (x_cloud - t)) and
// |Rt| (a box of half-extents h along the cloud's axes fits in one of half-extents |Rt| h along the shape's).
struct CloudView {
  Matrix3s Rt, A;
  Vec3s t;
  CloudView(const Geometry& shape, const Geometry& cloud) {
    const Transform3s T = cloud.T_world_geom.inverseTimes(shape.T_world_geom);  // T_cloud_shape
    Rt = T.getRotation().transpose();
    A = Rt.cwiseAbs();
    t = T.getTranslation();
  }
  Vec3s local(const Vec3s& x_cloud) const { return Rt * (x_cloud - t); }
};

// max over the points y of geometry g of u.y (u world, unit), at its placement: its support function (that
// of its convex hull); NaN where unknown (a mesh: no plane bound).
double support(const Geometry& g, const Vec3s& u) {
  const Vec3s v = g.T_world_geom.getRotation().transpose() * u;
  double h = -std::numeric_limits<double>::infinity();
  switch (g.kind) {
    case BOX:
    case CONVEX:
      for (const Vec3s& p : g.vertices) h = std::max(h, v.dot(p));
      break;
    case SPHERE: h = g.round_radius * v.norm(); break;
    case CAPSULE: h = g.half_length * std::abs(v[2]) + g.round_radius * v.norm(); break;
    case CYLINDER: h = g.half_length * std::abs(v[2]) + g.round_radius * std::hypot(v[0], v[1]); break;
    default: return std::numeric_limits<double>::quiet_NaN();
  }
  return h + u.dot(g.T_world_geom.getTranslation());
}

// A cylinder's or capsule's points farthest along u (world) at either end of its axis, world frame: its
// support point in u restricted to each end (the axis is the geometry's z). A cylinder or capsule lying
// along a face touches it along a segment: its witness point may be at either end, and these two points
// are what a convex hull's end vertices are to extra rows (a cylinder's cap disk facing u: its centre).
// false for another kind.
bool end_points(const Geometry& g, const Vec3s& u, Vec3s& end0, Vec3s& end1) {
  if (g.kind != CYLINDER && g.kind != CAPSULE) return false;
  const Vec3s v = g.T_world_geom.getRotation().transpose() * u;  // u in the geometry's frame
  Vec3s radial = Vec3s::Zero();
  const double lateral = g.kind == CAPSULE ? v.norm() : std::hypot(v[0], v[1]);
  if (lateral > kFlatEnd * v.norm()) {
    radial = (g.round_radius / lateral) * v;
    if (g.kind == CYLINDER) radial[2] = 0.0;
  }
  end0 = g.T_world_geom.transform(radial + Vec3s(0.0, 0.0, g.half_length));
  end1 = g.T_world_geom.transform(radial - Vec3s(0.0, 0.0, g.half_length));
  return true;
}

// Bounds closer than this to the least distance found do not make a cube evaluated: with ties (a flat face
// over a flat table, every cube beneath it at the same bound) rounding would decide, and the result is
// the least distance to 1 nm.
constexpr double kPruneSlack = 1e-9;  // [m]

// Exact distance from shape geometry `s` to cloud geometry `c` (the least over its cubes), if below `limit`:
// false if no cube is closer than `limit` (then the outputs are untouched). p_shape on s, p_cloud on a cube,
// normal from s to the cloud (coal's, penetration).
bool cloud_distance(Kernel& k, const Geometry& s, const Geometry& c, double limit, double& distance, Vec3s& p_shape,
                    Vec3s& p_cloud, Vec3s& normal) {
  const Cloud& cl = *c.cloud;
  const CloudView view(s, c);
  double best = limit;
  k.cell_order.clear();
  for (size_t i = 0; i < cl.cells.size(); ++i) {
    const Cloud::Cell& cell = cl.cells[i];
    const double b = box_aabb_bound(s, view.local(cell.center), view.A * cell.half);
    if (b < best) k.cell_order.emplace_back(b, static_cast<int64_t>(i));
  }
  std::sort(k.cell_order.begin(), k.cell_order.end());
  const Vec3s e_cube = view.A * Vec3s::Constant(cl.resolution / 2);
  const Matrix3s R_cloud_T = c.T_world_geom.getRotation().transpose();
  // the plane bound, once a cube is found at distance > 0 with witness p1 and normal n: every point y of s
  // has n.y <= h = support(s, n), so a cube (a box of half-extents e, cloud frame, at x) is at least
  // n.x - |n|.e - h from s (n in the cloud's frame for |n|); valid for any unit n, the closest's is tight
  bool plane = false;
  Vec3s n_world, n_abs;
  double h_plane = 0.0;
  Transform3s T_cube;
  T_cube.setRotation(c.T_world_geom.getRotation());
  coal::DistanceResult res;
  bool found = false;
  for (const auto& [bound, i] : k.cell_order) {
    if (bound >= best - kPruneSlack) break;  // neither this cell nor any later one holds a closer cube
    const Cloud::Cell& cell = cl.cells[i];
    if (plane && n_world.dot(c.T_world_geom.transform(cell.center)) - n_abs.dot(cell.half) - h_plane >= best - kPruneSlack)
      continue;
    for (int64_t p = cell.begin; p < cell.end; ++p) {
      const Vec3s& x = cl.points[p];
      if (plane && n_world.dot(c.T_world_geom.transform(x)) - n_abs.sum() * (cl.resolution / 2) - h_plane >= best - kPruneSlack)
        continue;
      if (box_aabb_bound(s, view.local(x), e_cube) >= best - kPruneSlack) continue;
      T_cube.setTranslation(c.T_world_geom.transform(x));
      res.clear();
      coal::distance(s.shape.get(), s.T_world_geom, cl.cube.get(), T_cube, k.request, res);
      if (res.min_distance < best) {
        best = distance = res.min_distance;
        p_shape = res.nearest_points[0];
        p_cloud = res.nearest_points[1];
        normal = res.normal;
        found = true;
        const Vec3s delta = p_cloud - p_shape;
        const double norm = delta.norm();
        if (best > 0 && norm > 1e-9) {
          n_world = delta / norm;
          h_plane = support(s, n_world);
          plane = std::isfinite(h_plane);
          n_abs = (R_cloud_T * n_world).cwiseAbs();
        }
      }
    }
  }
  return found;
}

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

// The point of the cube at `center` of cloud geometry g least along m (world): its centre minus resolution/2
// times the signs of m in the cloud's frame, where |m| > kFlatAxis (else the centre's coordinate: a face's or
// an edge's middle; the sign of a rounding error must not choose the corner). collision_rows.FLAT_AXIS
constexpr double kFlatAxis = 1e-9;
constexpr int64_t kCubeQueries = 4;     // nearest_cubes: cubes asked per row wanted; collision_rows.py: CUBE_QUERIES
constexpr double kSameCube = 1e-5;      // [m] a cube whose distance and point are the witness's within this is its (10 x GJK's tolerance)
constexpr double kCloudRowSlack = 1e-6;  // [m] a cube's row bound may be this below the pair's distance (GJK's
                                         // tolerance); collision_rows.CLOUD_ROW_SLACK

Vec3s cloud_vertex_at(const Geometry& g, const Vec3s& center, const Vec3s& m) {
  const Vec3s m_local = g.T_world_geom.getRotation().transpose() * m;
  Vec3s corner = center;
  for (int a = 0; a < 3; ++a)
    if (std::abs(m_local[a]) > kFlatAxis) corner[a] -= (m_local[a] > 0.0 ? 0.5 : -0.5) * g.cloud->resolution;
  return g.T_world_geom.transform(corner);
}

// The rows of up to `count` cubes of cloud `c` (fixed in the world) within `limit` of shape `s`, besides the
// witness's (the cube at `distance` whose point is `witness`), into k.cube_rows: exact distances (coal's, as
// cloud_distance's), least first. A noisy cloud is not the plane through its witness point: a cube beside the
// witness that stands out toward the link (1.4 mm noise) was reached in one step, 0.9 mm past the check's floor,
// while the link's vertex rows held that plane. The cubes asked: those within `limit` of the shape's local AABB,
// the kCubeQueries * count least far beyond the shape's support plane along `n` (the pair's normal, from the
// shape): n.x - |n|.e - support(s, n), as cloud_distance's bound (a cube standing out toward the link first).
void nearest_cubes(Kernel& k, const Geometry& s, const Geometry& c, const Vec3s& n, const Vec3s& witness,
                   double distance, double limit, int64_t count) {
  k.cube_rows.clear();
  if (count <= 0) return;
  const Cloud& cl = *c.cloud;
  const CloudView view(s, c);
  const Vec3s e_cube = view.A * Vec3s::Constant(cl.resolution / 2);
  const double h_plane = support(s, n);
  const Vec3s n_cloud = c.T_world_geom.getRotation().transpose() * n;  // n in the cloud's frame
  const double reach = n_cloud.cwiseAbs().sum() * (cl.resolution / 2);
  const double n_t = n.dot(c.T_world_geom.getTranslation());
  k.cube_order.clear();
  for (const Cloud::Cell& cell : cl.cells) {
    if (box_aabb_bound(s, view.local(cell.center), view.A * cell.half) > limit) continue;
    for (int64_t p = cell.begin; p < cell.end; ++p) {
      if (box_aabb_bound(s, view.local(cl.points[p]), e_cube) > limit) continue;
      const double bound = n_cloud.dot(cl.points[p]) + n_t - reach - h_plane;
      k.cube_order.emplace_back(std::floor(bound * kRowOrderSteps), p);
    }
  }
  const auto by_key = [&cl](const std::pair<double, int64_t>& a, const std::pair<double, int64_t>& b) {
    return a.first < b.first || (a.first == b.first && cl.index[a.second] < cl.index[b.second]);
  };
  const size_t asked = std::min(k.cube_order.size(), static_cast<size_t>(kCubeQueries * count));
  std::partial_sort(k.cube_order.begin(), k.cube_order.begin() + asked, k.cube_order.end(), by_key);
  Transform3s T_cube;
  T_cube.setRotation(c.T_world_geom.getRotation());
  coal::DistanceResult res;
  for (size_t i = 0; i < asked; ++i) {
    const int64_t p = k.cube_order[i].second;
    T_cube.setTranslation(c.T_world_geom.transform(cl.points[p]));
    res.clear();
    coal::distance(s.shape.get(), s.T_world_geom, cl.cube.get(), T_cube, k.request, res);
    const double d = res.min_distance;
    const Vec3s p_shape = res.nearest_points[0], p_cube = res.nearest_points[1];
    if (d > limit || (std::abs(d - distance) <= kSameCube && (p_cube - witness).norm() <= kSameCube)) continue;
    const Vec3s nr = unit_normal(d, p_shape, p_cube, res.normal);
    if (nr.squaredNorm() == 0.0) continue;
    k.cube_rows.push_back({p_shape, p_cube, nr, d, cl.index[p]});
  }
  std::sort(k.cube_rows.begin(), k.cube_rows.end(), [](const CubeRow& a, const CubeRow& b) {
    const double ka = std::floor(a.distance * kRowOrderSteps), kb = std::floor(b.distance * kRowOrderSteps);
    return ka < kb || (ka == kb && a.index < b.index);
  });
  if (k.cube_rows.size() > static_cast<size_t>(count)) k.cube_rows.resize(count);
}

// Extra-row candidates of a cloud (geometry g, side `side`) against convex geometry `other`: each cube's
// corner v least along m, value m.(v - q) <= limit, and only cubes whose lower bound of distance to
// `other` (its local AABB) is <= limit too (a far cube may lie near the plane; its row would add nothing),
// and value >= floor: a cloud is not convex, a cube beside the geometry may lie before the witness plane
// (a true but loose bound, below the pair's distance: its row would be violated more than the pair is).
void cloud_candidates(Kernel& k, const Geometry& g, const Geometry& other, const Vec3s& m, const Vec3s& q,
                      double floor, double limit, int side) {
  const Cloud& cl = *g.cloud;
  const CloudView view(other, g);
  const Vec3s m_local = g.T_world_geom.getRotation().transpose() * m;
  const Vec3s m_abs = m_local.cwiseAbs();
  const Vec3s e_cube = view.A * Vec3s::Constant(cl.resolution / 2);
  for (const Cloud::Cell& cell : cl.cells) {
    if (m.dot(g.T_world_geom.transform(cell.center) - q) - m_abs.dot(cell.half) > limit) continue;
    if (box_aabb_bound(other, view.local(cell.center), view.A * cell.half) > limit) continue;
    for (int64_t p = cell.begin; p < cell.end; ++p) {
      if (box_aabb_bound(other, view.local(cl.points[p]), e_cube) > limit) continue;
      const double value = m.dot(cloud_vertex_at(g, cl.points[p], m) - q);
      if (value <= limit && value >= floor) k.candidates.push_back({std::floor(value * kRowOrderSteps), side, cl.index[p]});
    }
  }
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
    // a row: points a (geometry 1) and b (geometry 2), its normal and value (the distance it bounds)
    auto emit = [&](const Vec3s& a, const Vec3s& b, const Vec3s& nr, double value) {
      row_pair[rows] = f;
      for (int i = 0; i < 3; ++i) {
        a_out[3 * rows + i] = a[i];
        b_out[3 * rows + i] = b[i];
        n_out[3 * rows + i] = nr[i];
      }
      h_out[rows] = value - d_min;
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
      for (size_t i = 0; i < g.vertices.size(); ++i) {
        const Vec3s v = g.T_world_geom.transform(g.vertices[i]);
        const double value = side == 0 ? n.dot(w2 - v) : n.dot(v - w1);
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
  const double inf = std::numeric_limits<double>::infinity();
  Vec3s p1, p2, normal;
  for (int64_t i = 0; i < count; ++i) {
    distance_out[i] = inf;
    pair_distance(k, k.geoms[k.first[pairs[i]]], k.geoms[k.second[pairs[i]]], inf, distance_out[i], p1, p2, normal);
  }
  return count;
}

}  // extern "C"
