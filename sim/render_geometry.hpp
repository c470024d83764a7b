#pragma once
// The exact areas sim/render.hpp draws with: a convex polygon's or a disc's intersection with an
// axis-aligned rectangle (a pixel's footprint), in single precision, written once for both backends.
#include <cmath>

#include "sim/hd.hpp"

namespace surge::render {

struct Point {
  float x, y;
};

inline constexpr int kMaxPolygonVertices = 12;

// fminf and fmaxf are calls into libm when the host compiler must keep their NaN rules; these inline.
SURGE_HD_INLINE float min_of(float a, float b) { return a < b ? a : b; }
SURGE_HD_INLINE float max_of(float a, float b) { return a > b ? a : b; }

SURGE_HD_INLINE float polygon_area(const Point* v, int n) {
  float twice = 0.0f;
  for (int i = 0; i < n; ++i) {
    const Point a = v[i], b = v[i + 1 == n ? 0 : i + 1];
    twice += a.x * b.y - a.y * b.x;
  }
  return 0.5f * twice;
}

// Keeps the part of polygon `in` (n vertices) on the side where sign * (coordinate - bound) <= 0 of an
// axis-aligned line; returns the new vertex count (at most n + 1 for a convex polygon).
SURGE_HD_INLINE int clip_polygon(const Point* in, int n, Point* out, bool along_x, float bound, float sign) {
  int m = 0;
  for (int i = 0; i < n; ++i) {
    const Point a = in[i], b = in[i + 1 == n ? 0 : i + 1];
    const float da = sign * ((along_x ? a.x : a.y) - bound);
    const float db = sign * ((along_x ? b.x : b.y) - bound);
    if (da <= 0.0f) out[m++] = a;
    if ((da < 0.0f && db > 0.0f) || (da > 0.0f && db < 0.0f)) {
      const float t = da / (da - db);
      out[m++] = {a.x + t * (b.x - a.x), a.y + t * (b.y - a.y)};
    }
  }
  return m;
}

// Area of a convex counter-clockwise polygon's intersection with the rectangle [x0, x1] x [y0, y1].
SURGE_HD_INLINE float polygon_rect_area(const Point* v, int n, float x0, float y0, float x1, float y1) {
  // Most pixels a shape's box reaches are wholly inside it or wholly outside one of its edges: decided by
  // the rectangle's corners against each edge, without clipping.
  bool inside = true;
  for (int i = 0; i < n; ++i) {
    const Point a = v[i], b = v[i + 1 == n ? 0 : i + 1];
    const float ex = b.x - a.x, ey = b.y - a.y;
    if (ex == 0.0f && ey == 0.0f) continue;
    const float c00 = ex * (y0 - a.y) - ey * (x0 - a.x), c10 = ex * (y0 - a.y) - ey * (x1 - a.x);
    const float c01 = ex * (y1 - a.y) - ey * (x0 - a.x), c11 = ex * (y1 - a.y) - ey * (x1 - a.x);
    if (c00 <= 0.0f && c10 <= 0.0f && c01 <= 0.0f && c11 <= 0.0f) return 0.0f;
    inside = inside && c00 >= 0.0f && c10 >= 0.0f && c01 >= 0.0f && c11 >= 0.0f;
  }
  if (inside) return (x1 - x0) * (y1 - y0);
  Point a[kMaxPolygonVertices + 4], b[kMaxPolygonVertices + 4];
  int m = clip_polygon(v, n, a, true, x0, -1.0f);
  m = clip_polygon(a, m, b, true, x1, 1.0f);
  m = clip_polygon(b, m, a, false, y0, -1.0f);
  m = clip_polygon(a, m, b, false, y1, 1.0f);
  return m < 3 ? 0.0f : fabsf(polygon_area(b, m));
}

// Integral of sqrt(r^2 - t^2) from 0 to x, for |x| <= r.
SURGE_HD_INLINE float half_chord_integral(float x, float r) {
  const float ratio = min_of(max_of(x / r, -1.0f), 1.0f);
  return 0.5f * (x * sqrtf(max_of(r * r - x * x, 0.0f)) + r * r * asinf(ratio));
}

// Area of the disc of radius r about the origin with x <= qx and y <= qy.
SURGE_HD_INLINE float disc_quadrant_area(float qx, float qy, float r) {
  if (qy <= -r || qx <= -r) return 0.0f;
  const float x_end = min_of(qx, r);
  const float full_left = half_chord_integral(-r, r);
  if (qy >= r) return 2.0f * (half_chord_integral(x_end, r) - full_left);
  // Inside |x| < w the column is cut at qy (length qy + h); outside, it lies wholly below qy (qy > 0)
  // or wholly above it (qy < 0).
  const float w = sqrtf(max_of(r * r - qy * qy, 0.0f));
  float area = 0.0f;
  if (qy > 0.0f) {
    area += 2.0f * (half_chord_integral(min_of(x_end, -w), r) - full_left);
    if (x_end > w) area += 2.0f * (half_chord_integral(x_end, r) - half_chord_integral(w, r));
  }
  if (x_end > -w) {
    const float cut = min_of(x_end, w);
    area += qy * (cut + w) + half_chord_integral(cut, r) - half_chord_integral(-w, r);
  }
  return area;
}

SURGE_HD_INLINE float disc_rect_area(Point c, float r, float x0, float y0, float x1, float y1) {
  x0 -= c.x, x1 -= c.x, y0 -= c.y, y1 -= c.y;
  const float r2 = r * r;
  const float far_x = max_of(x0 * x0, x1 * x1), far_y = max_of(y0 * y0, y1 * y1);
  if (far_x + far_y <= r2) return (x1 - x0) * (y1 - y0);  // the whole rectangle is inside
  const float area = disc_quadrant_area(x1, y1, r) - disc_quadrant_area(x0, y1, r) - disc_quadrant_area(x1, y0, r) +
                     disc_quadrant_area(x0, y0, r);
  return max_of(area, 0.0f);
}

}  // namespace surge::render
