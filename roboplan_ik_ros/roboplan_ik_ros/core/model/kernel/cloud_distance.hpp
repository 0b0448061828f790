// The pair distance kernel's point clouds (an octree's occupied cells, the perceived cloud): their cells binned
// in a grid (make_cloud), their exact narrow phase (cloud_distance), and their extra rows: the cubes nearest a
// link (nearest_cubes) and the cubes' corners as row candidates (cloud_candidates). Part of
// pair_distance_kernel.cpp's translation unit (kernel_types.hpp).
#ifndef ROBOPLAN_PDK_CLOUD_DISTANCE_HPP
#define ROBOPLAN_PDK_CLOUD_DISTANCE_HPP

#include <coal/distance.h>
#include <coal/shape/geometric_shapes.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "geometry.hpp"
#include "kernel_types.hpp"

namespace {

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

}  // namespace

#endif  // ROBOPLAN_PDK_CLOUD_DISTANCE_HPP
