// sim/render.hpp's coverage against numerical integration, and render_engine (every environment's
// frame through parallel_for) against drawing each state on its own.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "scenarios/registry.hpp"
#include "scenarios/scene_render.hpp"
#include "sim/memory.hpp"
#include "sim/render.hpp"

using namespace surge;

namespace {

// The share of a fine grid of points in [x0, x1] x [y0, y1] that `inside` accepts, times the area.
template <class Inside>
double grid_area(Inside inside, double x0, double y0, double x1, double y1) {
  const int steps = 800;
  int hits = 0;
  for (int i = 0; i < steps; ++i)
    for (int j = 0; j < steps; ++j)
      hits += inside(x0 + (x1 - x0) * (i + 0.5) / steps, y0 + (y1 - y0) * (j + 0.5) / steps) ? 1 : 0;
  return (x1 - x0) * (y1 - y0) * hits / (static_cast<double>(steps) * steps);
}

}  // namespace

TEST_CASE("a disc's area inside a rectangle matches integration, wherever the rectangle sits") {
  const render::Point centre{3.3f, -1.7f};
  const float radius = 2.6f;
  auto in_disc = [&](double x, double y) {
    return (x - centre.x) * (x - centre.x) + (y - centre.y) * (y - centre.y) <= radius * radius;
  };
  for (const auto& r : std::vector<std::array<float, 4>>{{3.0f, -2.0f, 3.5f, -1.5f},
                                                         {5.0f, -1.0f, 6.5f, 0.5f},
                                                         {0.0f, -5.0f, 7.0f, 2.0f},
                                                         {5.5f, 0.5f, 6.5f, 1.5f},
                                                         {1.0f, -4.6f, 2.0f, -3.6f},
                                                         {2.9f, 0.6f, 3.7f, 1.1f},
                                                         {-1.0f, -1.0f, 0.5f, 0.0f}}) {
    const double expected = grid_area(in_disc, r[0], r[1], r[2], r[3]);
    CHECK(render::disc_rect_area(centre, radius, r[0], r[1], r[2], r[3]) ==
          Approx(expected).margin(0.01 * (r[2] - r[0]) * (r[3] - r[1]) + 1e-4));
  }
}

TEST_CASE("a polygon grown by half a pixel covers what a scanline filler sets, and its area clips exactly") {
  render::Scene scene;
  render::begin_scene(scene, 100, 100);
  const render::Point triangle[3] = {{10, 10}, {30, 10}, {10, 40}};  // clockwise or not, either way
  render::add_polygon(scene, triangle, 3, {0, 0, 0});
  const render::Shape& grown = scene.shapes[0];
  CHECK(grown.min_x == 9.5f);
  CHECK(grown.max_x == 30.5f);
  CHECK(grown.min_y == 9.5f);
  CHECK(grown.max_y == 40.5f);
  // Area of P + S: P's, plus each edge times the square's half-width across it (|ex| + |ey|) / 2, plus S's.
  const double across_edges = 0.5 * ((20 + 0) + (20 + 30) + (0 + 30));
  const double area = render::polygon_rect_area(grown.vertices, grown.vertex_count, 0, 0, 100, 100);
  CHECK(area == Approx(300.0 + across_edges + 1.0).margin(1e-3));
  // A pixel wholly inside, one wholly outside, one cut by the long edge through its centre.
  CHECK(render::polygon_rect_area(grown.vertices, grown.vertex_count, 12, 12, 13, 13) == 1.0f);
  CHECK(render::polygon_rect_area(grown.vertices, grown.vertex_count, 40, 40, 41, 41) == 0.0f);
  auto in_grown = [&](double x, double y) {
    for (int i = 0; i < grown.vertex_count; ++i) {
      const render::Point a = grown.vertices[i], b = grown.vertices[(i + 1) % grown.vertex_count];
      if ((b.x - a.x) * (y - a.y) - (b.y - a.y) * (x - a.x) < 0) return false;
    }
    return true;
  };
  CHECK(render::polygon_rect_area(grown.vertices, grown.vertex_count, 19.5f, 24.5f, 20.5f, 25.5f) ==
        Approx(grid_area(in_grown, 19.5, 24.5, 20.5, 25.5)).margin(0.01));
}

TEST_CASE("degenerate polygons: repeated corners, one point, a point that is not finite", "[render]") {
  render::Scene scene;
  render::begin_scene(scene, 100, 100);
  // A pole of zero length (its four corners two by two the same) is the square around its ends.
  const render::Point flat[4] = {{10, 10}, {10, 10}, {20, 10}, {20, 10}};
  render::add_polygon(scene, flat, 4, {0, 0, 0});
  REQUIRE(scene.shape_count == 1);
  CHECK(scene.shapes[0].vertex_count <= render::kMaxPolygonVertices);
  CHECK(render::polygon_rect_area(scene.shapes[0].vertices, scene.shapes[0].vertex_count, 0, 0, 100, 100) ==
        Approx(11.0).margin(1e-4));  // the segment 10 long grown by the unit square
  const render::Point point[4] = {{50, 50}, {50, 50}, {50, 50}, {50, 50}};
  render::add_polygon(scene, point, 4, {0, 0, 0});
  REQUIRE(scene.shape_count == 2);
  CHECK(scene.shapes[1].vertex_count == 4);
  CHECK(render::polygon_rect_area(scene.shapes[1].vertices, 4, 0, 0, 100, 100) == Approx(1.0).margin(1e-6));
  const render::Point far[4] = {{NAN, 0}, {1, 0}, {1, 1}, {0, 1}};
  render::add_polygon(scene, far, 4, {0, 0, 0});
  render::add_disc(scene, {INFINITY, 0}, 3, {0, 0, 0});
  CHECK(scene.shape_count == 2);
}

TEST_CASE("render_engine draws every environment as drawing each state alone does", "[render]") {
  for (const std::string name : {"cartpole", "acrobot", "mountain_car_continuous"}) {
    const std::int64_t n = 7;
    auto engine = make_engine(name, Device::cpu(), n, 5);
    Stream stream(Device::cpu());
    // Move the environments off their reset states: random steps through rollout_random.
    DeviceBuffer<float> obs(Device::cpu(), 9 * n * engine->spec().obs_dim), reward(Device::cpu(), 9 * n);
    DeviceBuffer<std::uint8_t> terminated(Device::cpu(), 9 * n), truncated(Device::cpu(), 9 * n);
    engine->rollout_random(9, RolloutViews{obs.span(), reward.span(), terminated.span(), truncated.span()}, stream);
    for (const FrameSize size : {FrameSize{84, 84, 3}, FrameSize{37, 23, 1}}) {
      DeviceBuffer<std::uint8_t> frames(Device::cpu(), n * size.bytes());
      render_engine(*engine, size, frames.span(), stream);
      const std::vector<std::uint8_t> batched = to_host(frames.cspan(), stream);
      const std::vector<float> states = to_host(engine->states(), stream);
      const std::vector<double> params = params_to_host(*engine, stream);
      std::vector<std::uint8_t> single(static_cast<std::size_t>(n * size.bytes()));
      render_states(name, states.data(), params.data(), n, size, single.data());
      CHECK(batched == single);
      // Not a blank picture: every frame has its shapes.
      std::int64_t dark = 0;
      for (std::uint8_t value : batched) dark += value < 250 ? 1 : 0;
      CHECK(dark > n * 20);
    }
  }
}
