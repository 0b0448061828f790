// The pair distance kernel's geometry helpers: a geometry's placement from its joint's, the broad phase's
// lower bound, a pair's unit normal, a box's bound to a geometry, a geometry's support function and a
// cylinder's or capsule's end points. Part of pair_distance_kernel.cpp's translation unit (kernel_types.hpp).
#ifndef ROBOPLAN_PDK_GEOMETRY_HPP
#define ROBOPLAN_PDK_GEOMETRY_HPP

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernel_types.hpp"

namespace {

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

// A lower bound of the distance from a box of half-extents e (axes of geometry `g`'s frame) centred at x
// (geometry frame) to geometry g (inside its local AABB): -inf where they overlap (no bound of a penetration).
inline double box_aabb_bound(const Geometry& g, const Vec3s& x, const Vec3s& e) {
  const Vec3s out = (g.aabb_lo - e - x).cwiseMax(x - g.aabb_hi - e);
  if (out.maxCoeff() <= 0.0) return -std::numeric_limits<double>::infinity();
  return out.cwiseMax(0.0).norm();
}

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

// A cylinder whose axis is within this (sine) of u has its cap facing u: the cap's centre is its end point
constexpr double kFlatEnd = 1e-9;  // collision_rows.py: FLAT_END

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

}  // namespace

#endif  // ROBOPLAN_PDK_GEOMETRY_HPP
