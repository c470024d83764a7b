#pragma once
// Drawing a scene into a frame, written once for both backends (SURGE_HD, no allocation, no exceptions).
//
// A scene is described in its reference renderer's own pixel space ("scene space"): Gymnasium's pygame
// surface before its vertical flip, y up, with pixel (i, j) centred on the point (i, j). Every shape
// is a convex polygon or a disc (at most Scene::kMaxShapes), plus at most one smooth curve drawn as a
// chain of one-pixel-wide strokes (MountainCar's hill). A frame of any size W x H shows the whole scene
// (W0 x H0): output pixel (c, r) covers the rectangle [c sx - 1/2, (c+1) sx - 1/2] x
// [H0 - 1/2 - (r+1) sy, H0 - 1/2 - r sy] of scene space, with sx = W0 / W and sy = H0 / H, and each
// shape's colour is laid over the pixel with the exact fraction of that rectangle it covers (its area),
// in drawing order. So a 64 x 64 frame is what area-averaging the full-size picture would give, without
// drawing the full-size picture.
#include <cmath>
#include <cstdint>

#include "sim/hd.hpp"
#include "sim/render_geometry.hpp"

namespace surge::render {

struct Colour {
  float r, g, b;
};

// A caller's frame: row-major, rows top to bottom, `channels` 3 (RGB) or 1 (grey, ITU-R BT.601 luma as
// OpenCV's RGB2GRAY computes it), `row_stride` bytes between rows.
struct FrameView {
  std::uint8_t* pixels;
  int width, height, channels;
  std::int64_t row_stride;
};

struct Shape {
  enum Kind : std::uint8_t { Polygon, Disc };
  Kind kind;
  std::uint8_t vertex_count;
  Colour colour;
  Point vertices[kMaxPolygonVertices];  // Polygon: convex, counter-clockwise; Disc: vertices[0] is the centre
  float radius;                         // Disc only
  float min_x, min_y, max_x, max_y;     // bounding box
};

// y = amplitude sin(frequency x + phase) + offset between x_begin and x_end, sampled at `samples`
// points and joined by straight strokes one pixel thick across their minor axis (an anti-aliased
// line's width), all in scene space.
struct SineCurve {
  float x_begin, x_end, amplitude, frequency, phase, offset;
  int samples;
  Colour colour;
};

struct Scene {
  static constexpr int kMaxShapes = 8;
  static constexpr int kMaxCurveSamples = 128;
  float width, height;  // scene space size, W0 x H0
  Colour background;
  int shape_count;
  bool has_curve;
  SineCurve curve;                   // drawn first, over the background
  float curve_ys[kMaxCurveSamples];  // curve_y(curve, i) for every sample, filled by sample_curve
  Shape shapes[kMaxShapes];
};

// ---- building shapes -----------------------------------------------------------------------------

SURGE_HD_INLINE void finish_bounds(Shape& s) {
  if (s.kind == Shape::Disc) {
    s.min_x = s.vertices[0].x - s.radius, s.max_x = s.vertices[0].x + s.radius;
    s.min_y = s.vertices[0].y - s.radius, s.max_y = s.vertices[0].y + s.radius;
    return;
  }
  s.min_x = s.max_x = s.vertices[0].x;
  s.min_y = s.max_y = s.vertices[0].y;
  for (int i = 1; i < s.vertex_count; ++i) {
    s.min_x = min_of(s.min_x, s.vertices[i].x), s.max_x = max_of(s.max_x, s.vertices[i].x);
    s.min_y = min_of(s.min_y, s.vertices[i].y), s.max_y = max_of(s.max_y, s.vertices[i].y);
  }
}

// Neither infinite nor NaN (a NaN compares false).
SURGE_HD_INLINE bool finite(float x) { return fabsf(x) <= 3.40282347e38f; }

// The direction from a to b as a "diamond angle" in [0, 4): increasing with the true angle from the
// +x axis, 0, 1, 2, 3 along +x, +y, -x, -y, and no trigonometry.
SURGE_HD_INLINE float edge_angle(Point a, Point b) {
  const float dx = b.x - a.x, dy = b.y - a.y;
  const float turn = dy / (fabsf(dx) + fabsf(dy));
  return dx < 0.0f ? 2.0f - turn : (dy < 0.0f ? 4.0f + turn : turn);
}

// Appends the polygon `v` (n <= 8 vertices, convex, either orientation) grown by the square [-h, h]^2
// (its Minkowski sum with it): the pixels a scanline filler sets when it includes both ends of each
// span are the polygon grown by half a pixel. Repeated points are dropped (a pole of zero length is its
// square); a polygon with a point that is not finite (a state far outside the frame) is not drawn.
SURGE_HD_INLINE void add_polygon(Scene& scene, const Point* v, int n, Colour colour, float h = 0.5f) {
  for (int i = 0; i < n; ++i)
    if (!finite(v[i].x) || !finite(v[i].y)) return;
  Point p[8] = {};
  const bool clockwise = polygon_area(v, n) < 0.0f;
  int m = 0;
  for (int i = 0; i < n; ++i) {
    const Point q = v[clockwise ? n - 1 - i : i];
    if (m == 0 || q.x != p[m - 1].x || q.y != p[m - 1].y) p[m++] = q;
  }
  while (m > 1 && p[m - 1].x == p[0].x && p[m - 1].y == p[0].y) --m;
  const int edges = m > 1 ? m : 0;  // a single point: the square alone
  Shape& s = scene.shapes[scene.shape_count++];
  s.kind = Shape::Polygon;
  s.colour = colour;
  int low = 0;  // lowest, then leftmost: the edges from there turn through angles in [0, 2 pi)
  for (int i = 1; i < m; ++i)
    if (p[i].y < p[low].y || (p[i].y == p[low].y && p[i].x < p[low].x)) low = i;
  const Point square_step[4] = {{2 * h, 0}, {0, 2 * h}, {-2 * h, 0}, {0, -2 * h}};
  Point at = {p[low].x - h, p[low].y - h};
  int count = 0, taken_polygon = 0, taken_square = 0;
  // Each turn takes one edge of either: at most edges + 4 <= kMaxPolygonVertices corners, whatever the
  // angles compare as.
  while (taken_polygon < edges || taken_square < 4) {
    s.vertices[count++] = at;
    const Point a = p[(low + taken_polygon) % m], b = p[(low + taken_polygon + 1) % m];
    const bool polygon_next =
        taken_square >= 4 || (taken_polygon < edges && edge_angle(a, b) <= static_cast<float>(taken_square));
    if (polygon_next) {
      at = {at.x + b.x - a.x, at.y + b.y - a.y};
      ++taken_polygon;
    } else {
      at = {at.x + square_step[taken_square].x, at.y + square_step[taken_square].y};
      ++taken_square;
    }
    if (count > 1 && s.vertices[count - 1].x == s.vertices[count - 2].x &&
        s.vertices[count - 1].y == s.vertices[count - 2].y)
      --count;
  }
  s.vertex_count = static_cast<std::uint8_t>(count);
  finish_bounds(s);
}

SURGE_HD_INLINE void add_disc(Scene& scene, Point centre, float radius, Colour colour) {
  if (!finite(centre.x) || !finite(centre.y) || !finite(radius)) return;
  Shape& s = scene.shapes[scene.shape_count++];
  s.kind = Shape::Disc;
  s.colour = colour;
  s.vertex_count = 1;
  s.vertices[0] = centre;
  s.radius = radius;
  finish_bounds(s);
}

// A one-pixel line from a to b (both ends included), as a pixel-exact line drawer sets it.
SURGE_HD_INLINE void add_line(Scene& scene, Point a, Point b, Colour colour) {
  const Point segment[2] = {a, b};
  add_polygon(scene, segment, 2, colour);
}

// pygame's int(): towards zero.
SURGE_HD_INLINE Point truncated(Point p) { return {truncf(p.x), truncf(p.y)}; }

SURGE_HD_INLINE Point rotated(Point p, float angle) {
  const float c = cosf(angle), s = sinf(angle);
  return {p.x * c - p.y * s, p.x * s + p.y * c};
}

// A polygon given in its own frame, turned by `angle` about its origin and moved to `origin`; its
// corners truncated to whole pixels as gfxdraw does.
SURGE_HD_INLINE void add_placed_polygon(Scene& scene, const Point* corners, int n, float angle, Point origin,
                                        Colour colour) {
  Point placed[8];
  for (int i = 0; i < n; ++i) {
    const Point c = rotated(corners[i], angle);
    placed[i] = truncated({c.x + origin.x, c.y + origin.y});
  }
  add_polygon(scene, placed, n, colour);
}

SURGE_HD_INLINE void begin_scene(Scene& scene, float width, float height) {
  scene.width = width, scene.height = height;
  scene.background = {255.0f, 255.0f, 255.0f};
  scene.shape_count = 0;
  scene.has_curve = false;
}

// ---- drawing -------------------------------------------------------------------------------------

SURGE_HD_INLINE float shape_coverage(const Shape& s, float x0, float y0, float x1, float y1) {
  if (x1 <= s.min_x || x0 >= s.max_x || y1 <= s.min_y || y0 >= s.max_y) return 0.0f;
  if (s.kind == Shape::Disc) return disc_rect_area(s.vertices[0], s.radius, x0, y0, x1, y1);
  return polygon_rect_area(s.vertices, s.vertex_count, x0, y0, x1, y1);
}

SURGE_HD_INLINE float curve_y(const SineCurve& c, int i) {
  const float x = c.x_begin + (c.x_end - c.x_begin) * static_cast<float>(i) / static_cast<float>(c.samples - 1);
  return c.amplitude * sinf(c.frequency * x + c.phase) + c.offset;
}

// The curve's strokes that can reach [x0, x1] x [y0, y1], each a parallelogram one pixel thick across
// its minor axis; the strokes meet end to end, so their areas add. `ys[i]` is curve_y(c, i) (the
// scene's samples, or computed afresh: the same values).
template <class Samples>
SURGE_HD_INLINE float curve_coverage(const SineCurve& c, const Samples& ys, float x0, float y0, float x1, float y1) {
  const float step = (c.x_end - c.x_begin) / static_cast<float>(c.samples - 1);
  // A steep stroke is a pixel wide horizontally too, so look one pixel further each way.
  const int first = static_cast<int>(max_of(floorf((x0 - 1.0f - c.x_begin) / step), 0.0f));
  const int last = static_cast<int>(min_of(floorf((x1 + 1.0f - c.x_begin) / step), static_cast<float>(c.samples - 2)));
  float area = 0.0f;
  for (int i = first; i <= last; ++i) {
    const Point a = {c.x_begin + step * static_cast<float>(i), ys[i]};
    const Point b = {c.x_begin + step * static_cast<float>(i + 1), ys[i + 1]};
    if (min_of(a.y, b.y) - 1.0f >= y1 || max_of(a.y, b.y) + 1.0f <= y0) continue;
    Point quad[4];
    if (fabsf(b.y - a.y) <= fabsf(b.x - a.x)) {
      quad[0] = {a.x, a.y - 0.5f}, quad[1] = {b.x, b.y - 0.5f}, quad[2] = {b.x, b.y + 0.5f},
      quad[3] = {a.x, a.y + 0.5f};
    } else {
      const float dx = b.y > a.y ? 0.5f : -0.5f;
      quad[0] = {a.x + dx, a.y}, quad[1] = {b.x + dx, b.y}, quad[2] = {b.x - dx, b.y}, quad[3] = {a.x - dx, a.y};
    }
    area += polygon_rect_area(quad, 4, x0, y0, x1, y1);
  }
  return area;
}

SURGE_HD_INLINE void lay_over(Colour& pixel, Colour colour, float coverage) {
  coverage = min_of(coverage, 1.0f);
  pixel.r += (colour.r - pixel.r) * coverage;
  pixel.g += (colour.g - pixel.g) * coverage;
  pixel.b += (colour.b - pixel.b) * coverage;
}

SURGE_HD_INLINE std::uint8_t to_byte(float value) {
  return static_cast<std::uint8_t>(min_of(max_of(value + 0.5f, 0.0f), 255.0f));
}

SURGE_HD_INLINE void put_pixel(std::uint8_t* out, int column, int channels, Colour pixel) {
  if (channels == 1) {
    out[column] = to_byte(0.299f * pixel.r + 0.587f * pixel.g + 0.114f * pixel.b);
  } else {
    out[3 * column] = to_byte(pixel.r), out[3 * column + 1] = to_byte(pixel.g), out[3 * column + 2] = to_byte(pixel.b);
  }
}

SURGE_HD_INLINE void fill_row(std::uint8_t* out, int width, int channels, Colour colour) {
  put_pixel(out, 0, channels, colour);
  if (channels == 1) {
    const std::uint8_t grey = out[0];
    for (int column = 1; column < width; ++column) out[column] = grey;
  } else {
    const std::uint8_t r = out[0], g = out[1], b = out[2];
    for (int column = 1; column < width; ++column)
      out[3 * column] = r, out[3 * column + 1] = g, out[3 * column + 2] = b;
  }
}

// Columns [begin, end) of one output row.
struct ColumnSpan {
  int begin, end;
};

// The columns a row computes: where each shape and the curve may cover something, and their hull.
struct RowSpans {
  ColumnSpan all, curve, shapes[Scene::kMaxShapes];
};

// The columns whose footprint [c sx - 1/2, (c+1) sx - 1/2] can reach [x_min, x_max], and one more each
// side: a column left out is a whole column (sx) clear of the interval, so the coverage computed for it
// is exactly 0 however its rounding goes.
SURGE_HD_INLINE ColumnSpan columns_reaching(float x_min, float x_max, float sx, int width) {
  if (!(x_min <= x_max)) return {0, 0};
  const float last = static_cast<float>(width);
  const float begin = min_of(max_of(floorf((x_min + 0.5f) / sx) - 1.0f, 0.0f), last);
  const float end = min_of(max_of(floorf((x_max + 0.5f) / sx) + 2.0f, 0.0f), last);
  return {static_cast<int>(begin), static_cast<int>(end)};
}

// The x extent of a convex polygon's part between the heights y0 and y1 (empty: x_min > x_max). Each
// edge's part inside the strip is the edge cut at y0 and y1; together they bound the polygon's part.
SURGE_HD_INLINE void polygon_strip_extent(const Point* v, int n, float y0, float y1, float& x_min, float& x_max) {
  x_min = 3.40282347e38f, x_max = -3.40282347e38f;
  for (int i = 0; i < n; ++i) {
    const Point a = v[i], b = v[i + 1 == n ? 0 : i + 1];
    if (max_of(a.y, b.y) < y0 || min_of(a.y, b.y) > y1) continue;
    float ta = 0.0f, tb = 1.0f;
    if (a.y != b.y) {
      ta = min_of(max_of((y0 - a.y) / (b.y - a.y), 0.0f), 1.0f);
      tb = min_of(max_of((y1 - a.y) / (b.y - a.y), 0.0f), 1.0f);
    }
    const float xa = a.x + ta * (b.x - a.x), xb = a.x + tb * (b.x - a.x);
    x_min = min_of(x_min, min_of(xa, xb)), x_max = max_of(x_max, max_of(xa, xb));
  }
}

// A row's spans for the footprint heights [y0, y1]. A shape's extent is taken over half a scene pixel
// more above and below the row, so that a column left out is clear of the shape by that much, not only
// by the column's width. The curve's span covers every stroke curve_coverage would take for some column
// of the row.
SURGE_HD_INLINE void row_spans(const Scene& scene, float sx, float y0, float y1, int width, RowSpans& spans) {
  const float low = y0 - 0.5f, high = y1 + 0.5f;
  for (int k = 0; k < scene.shape_count; ++k) {
    const Shape& s = scene.shapes[k];
    ColumnSpan& span = spans.shapes[k];
    span = {0, 0};
    if (y1 <= s.min_y || y0 >= s.max_y) continue;  // shape_coverage's own test: 0 for the whole row
    if (s.kind == Shape::Disc) {
      span = columns_reaching(s.min_x, s.max_x, sx, width);
    } else {
      float x_min, x_max;
      polygon_strip_extent(s.vertices, s.vertex_count, low, high, x_min, x_max);
      span = columns_reaching(x_min, x_max, sx, width);
    }
  }
  spans.curve = {0, 0};
  if (scene.has_curve) {
    const SineCurve& c = scene.curve;
    const float step = (c.x_end - c.x_begin) / static_cast<float>(c.samples - 1);
    float x_min = 3.40282347e38f, x_max = -3.40282347e38f;
    for (int i = 0; i + 1 < c.samples; ++i) {
      const float ya = scene.curve_ys[i], yb = scene.curve_ys[i + 1];
      if (min_of(ya, yb) - 1.0f >= y1 || max_of(ya, yb) + 1.0f <= y0) continue;
      // A column takes stroke i when its footprint reaches [x_i - 1, x_(i+1) + 1].
      x_min = min_of(x_min, c.x_begin + step * static_cast<float>(i) - 1.0f);
      x_max = max_of(x_max, c.x_begin + step * static_cast<float>(i + 1) + 1.0f);
    }
    spans.curve = columns_reaching(x_min, x_max, sx, width);
  }
  spans.all = spans.curve.begin < spans.curve.end ? spans.curve : ColumnSpan{width, 0};
  for (int k = 0; k < scene.shape_count; ++k) {
    const ColumnSpan span = spans.shapes[k];
    if (span.begin >= span.end) continue;
    spans.all.begin = span.begin < spans.all.begin ? span.begin : spans.all.begin;
    spans.all.end = span.end > spans.all.end ? span.end : spans.all.end;
  }
}

// Evaluates the curve's samples once per scene rather than once per pixel that reaches them (at most
// Scene::kMaxCurveSamples; a curve asking for more is drawn with that many). Call after building.
SURGE_HD_INLINE void sample_curve(Scene& scene) {
  if (!scene.has_curve) return;
  scene.curve.samples = scene.curve.samples < Scene::kMaxCurveSamples ? scene.curve.samples : Scene::kMaxCurveSamples;
  for (int i = 0; i < scene.curve.samples; ++i) scene.curve_ys[i] = curve_y(scene.curve, i);
}

// Output row `row` of `frame`: every pixel's colour from the shapes' coverage of its footprint. The row
// is filled with the background, then only the columns some shape or the curve can reach are
// computed (row_spans), pixel by pixel as everywhere: a column outside a
// shape's span is one the shape's coverage is exactly 0 for, so the frame is the same to the bit as
// computing every pixel.
SURGE_HD_INLINE void draw_row(const Scene& scene, const FrameView& frame, int row) {
  const float sx = scene.width / static_cast<float>(frame.width);
  const float sy = scene.height / static_cast<float>(frame.height);
  const float inverse_area = 1.0f / (sx * sy);
  const float y1 = scene.height - 0.5f - sy * static_cast<float>(row);
  const float y0 = y1 - sy;
  std::uint8_t* out = frame.pixels + frame.row_stride * row;
  fill_row(out, frame.width, frame.channels, scene.background);
  RowSpans spans;
  row_spans(scene, sx, y0, y1, frame.width, spans);
  for (int column = spans.all.begin; column < spans.all.end; ++column) {
    const float x0 = sx * static_cast<float>(column) - 0.5f, x1 = x0 + sx;
    Colour pixel = scene.background;
    if (spans.curve.begin <= column && column < spans.curve.end)
      lay_over(pixel, scene.curve.colour, curve_coverage(scene.curve, scene.curve_ys, x0, y0, x1, y1) * inverse_area);
    for (int k = 0; k < scene.shape_count; ++k) {
      if (column < spans.shapes[k].begin || column >= spans.shapes[k].end) continue;
      const float area = shape_coverage(scene.shapes[k], x0, y0, x1, y1);
      if (area > 0.0f) lay_over(pixel, scene.shapes[k].colour, area * inverse_area);
    }
    put_pixel(out, column, frame.channels, pixel);
  }
}

SURGE_HD_INLINE void draw(const Scene& scene, const FrameView& frame) {
  for (int row = 0; row < frame.height; ++row) draw_row(scene, frame, row);
}

// SceneOf<Scenario> (in scenarios/<name>_render.hpp) draws a scenario's state as its reference does:
//   static constexpr int kWidth, kHeight;   // the reference's frame size, the scene space's W0 x H0
//   SURGE_HD static void build(const State&, const Params&, render::Scene&);   // adds the shapes
template <class Scenario>
struct SceneOf;

template <class Scenario>
SURGE_HD_INLINE void build_scene(const typename Scenario::State& state, const typename Scenario::Params& params,
                                 Scene& scene) {
  begin_scene(scene, SceneOf<Scenario>::kWidth, SceneOf<Scenario>::kHeight);
  SceneOf<Scenario>::build(state, params, scene);
  sample_curve(scene);
}

// A scenario's state drawn into `frame`: the scene built, then every row.
template <class Scenario>
SURGE_HD_INLINE void draw_state(const typename Scenario::State& state, const typename Scenario::Params& params,
                                const FrameView& frame) {
  Scene scene;
  build_scene<Scenario>(state, params, scene);
  draw(scene, frame);
}

}  // namespace surge::render
