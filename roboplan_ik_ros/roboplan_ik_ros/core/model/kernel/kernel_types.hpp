// The pair distance kernel's data: the shape kinds, a geometry as the kernel holds it, a pair found, an extra
// row's candidate, and the kernel itself (its geometries, pairs, joint placement pointers and scratch).
// Like geometry.hpp and cloud_distance.hpp, included by pair_distance_kernel.cpp only: parts of its one
// translation unit (setup.py compiles the .cpp alone), each in its anonymous namespace, the same one: no
// symbol is exported, and the compiler sees every definition where it is called, as in one file.
#ifndef ROBOPLAN_PDK_KERNEL_TYPES_HPP
#define ROBOPLAN_PDK_KERNEL_TYPES_HPP

#include <coal/distance.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <string>
#include <vector>

namespace {

using coal::Matrix3s;
using coal::Transform3s;
using coal::Vec3s;

enum ShapeKind : int64_t { BOX = 1, SPHERE = 2, CYLINDER = 3, CAPSULE = 4, CONVEX = 5, MESH = 6, OCTREE = 7 };

struct Cloud;  // a point cloud's cells (cloud_distance.hpp)

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
  // a collision barrier's candidates at its last two updates (pdk_barrier_update: the approach of each pair):
  // slot `written` gets this update's, the other holds the update before's; q of the last update
  std::vector<int64_t> history_pair[2];
  std::vector<double> history_distance[2];
  int64_t history_count[2] = {0, 0};
  int written = 0;
  std::vector<double> history_q;
  std::vector<int64_t> next_pair;  // pdk_barrier_evaluate: the closest pairs within d_min at the new placements
  std::vector<double> next_distance, next_points;
  std::string error;  // what the last call that returned PDK_THREW caught (pdk_last_error)

  explicit Kernel(double tolerance) : request(true) {
    request.gjk_tolerance = tolerance;
    request.enable_signed_distance = true;
  }
};

}  // namespace

#endif  // ROBOPLAN_PDK_KERNEL_TYPES_HPP
