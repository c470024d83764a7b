// sim/render.hpp's coverage against numerical integration, and render_engine (every environment's
// frame through parallel_for) against drawing each state on its own.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "scenarios/acrobot_render.hpp"
#include "scenarios/cartpole_render.hpp"
#include "scenarios/mountain_car_render.hpp"
#include "scenarios/pendulum_render.hpp"
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

// Every pixel computed, every shape's coverage asked for, the curve's samples recomputed where they are
// needed: what draw_row computed before it learnt to skip the columns nothing reaches.
struct RecomputedSamples {
  const render::SineCurve& curve;
  float operator[](int i) const { return render::curve_y(curve, i); }
};

void draw_every_pixel(const render::Scene& scene, const render::FrameView& frame) {
  const float sx = scene.width / static_cast<float>(frame.width);
  const float sy = scene.height / static_cast<float>(frame.height);
  const float inverse_area = 1.0f / (sx * sy);
  for (int row = 0; row < frame.height; ++row) {
    const float y1 = scene.height - 0.5f - sy * static_cast<float>(row);
    const float y0 = y1 - sy;
    for (int column = 0; column < frame.width; ++column) {
      const float x0 = sx * static_cast<float>(column) - 0.5f, x1 = x0 + sx;
      render::Colour pixel = scene.background;
      if (scene.has_curve) {
        const float area = render::curve_coverage(scene.curve, RecomputedSamples{scene.curve}, x0, y0, x1, y1);
        render::lay_over(pixel, scene.curve.colour, area * inverse_area);
      }
      for (int k = 0; k < scene.shape_count; ++k) {
        const float area = render::shape_coverage(scene.shapes[k], x0, y0, x1, y1);
        if (area > 0.0f) render::lay_over(pixel, scene.shapes[k].colour, area * inverse_area);
      }
      render::put_pixel(frame.pixels + frame.row_stride * row, column, frame.channels, pixel);
    }
  }
}

// Random states (angles all round, positions past the frame's edges) under random parameters (half to
// one and a half times the defaults: CartPole's pole length, Acrobot's links), drawn by render_states
// and by draw_every_pixel; returns how many frames differ in any byte.
template <class S>
int frames_differing(std::mt19937& rng, int count, FrameSize size, float spread) {
  constexpr std::size_t kStateDim = S::kStateNames.size(), kParamCount = S::kParams.size();
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> states(count * kStateDim);
  std::vector<double> params(count * kParamCount);
  for (float& value : states) value = spread * uniform(rng);
  for (int i = 0; i < count; ++i)
    for (std::size_t k = 0; k < kParamCount; ++k)
      params[i * kParamCount + k] = S::kParams[k].default_value * (1.0 + 0.5 * uniform(rng));
  std::vector<std::uint8_t> drawn(count * size.bytes()), expected(count * size.bytes());
  render_states(S::kName, states.data(), params.data(), count, size, drawn.data());
  int differing = 0;
  for (int i = 0; i < count; ++i) {
    typename S::State state;
    typename S::Params param;
    std::memcpy(&state, &states[i * kStateDim], sizeof(state));
    auto* values = reinterpret_cast<typename S::ParamType*>(&param);
    for (std::size_t k = 0; k < kParamCount; ++k)
      values[k] = static_cast<typename S::ParamType>(params[i * kParamCount + k]);
    render::Scene scene;
    render::build_scene<S>(state, param, scene);
    std::uint8_t* out = expected.data() + i * size.bytes();
    draw_every_pixel(scene, {out, size.width, size.height, size.channels, std::int64_t{size.width} * size.channels});
    differing += std::memcmp(out, drawn.data() + i * size.bytes(), size.bytes()) != 0 ? 1 : 0;
  }
  return differing;
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

TEST_CASE("drawing only the columns shapes reach changes no pixel of any scenario at any size", "[render]") {
  std::mt19937 rng(16);
  const std::vector<FrameSize> sizes = {{84, 84, 1},   {64, 64, 1}, {84, 84, 3},  {37, 23, 1},
                                        {150, 100, 3}, {9, 7, 3},   {700, 450, 1}};
  for (const FrameSize size : sizes) {
    // Many small frames, fewer large ones; spread 3 reaches past every scenario's frame or range.
    const int count = size.width * size.height > 10000 ? 6 : 120;
    INFO(size.width << "x" << size.height << "x" << size.channels);
    CHECK(frames_differing<CartPole>(rng, count, size, 3.0f) == 0);
    CHECK(frames_differing<Acrobot>(rng, count, size, 3.5f) == 0);
    CHECK(frames_differing<Pendulum>(rng, count, size, 3.5f) == 0);
    CHECK(frames_differing<MountainCar>(rng, count, size, 1.3f) == 0);
    CHECK(frames_differing<MountainCarContinuous>(rng, count, size, 1.3f) == 0);
  }
}
