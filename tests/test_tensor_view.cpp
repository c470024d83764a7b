// Shaped views (sim/tensor_view.hpp) and the views sim/ and rl/ describe with them: the engine's step
// outputs, actions and state, every rollout field and every parameter slice. Shapes, strides and
// addresses are checked against the buffers' own accessors; each error path is taken.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rl/actor_critic.hpp"
#include "rl/rollout.hpp"
#include "scenarios/registry.hpp"
#include "sim/engine_views.hpp"
#include "sim/memory.hpp"
#include "sim/tensor_view.hpp"

using namespace surge;

namespace {

std::vector<std::int64_t> shape_of(const TensorView& view) {
  return std::vector<std::int64_t>(view.shape.begin(), view.shape.begin() + view.rank);
}
std::vector<std::int64_t> strides_of(const TensorView& view) {
  return std::vector<std::int64_t>(view.strides.begin(), view.strides.begin() + view.rank);
}
// The message of the InputError `call` throws ("" if it throws none).
template <class F>
std::string input_error(F&& call) {
  try {
    call();
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("TensorView::of gives a contiguous row-major view of a whole span", "[tensor_view]") {
  DeviceBuffer<float> buffer(Device::cpu(), 2 * 3 * 4);
  const TensorView view = TensorView::of(buffer.span(), {2, 3, 4});
  CHECK(view.data == buffer.data());
  CHECK(view.dtype == DType::Float32);
  CHECK(view.device == Device::cpu());
  CHECK(shape_of(view) == std::vector<std::int64_t>{2, 3, 4});
  CHECK(strides_of(view) == std::vector<std::int64_t>{12, 4, 1});
  CHECK(view.numel() == 24);
  CHECK(view.is_contiguous());
  CHECK(view.describe() == "float32[2][3][4] on cpu");
  CHECK(view.span<float>().data == buffer.data());
  CHECK(view.span<float>().size == 24);

  DeviceBuffer<std::uint8_t> flags(Device::cpu(), 5);
  const TensorView scalar_flags = TensorView::of(flags.cspan(), {5});
  CHECK(scalar_flags.dtype == DType::UInt8);
  CHECK(TensorView::of(buffer.span().slice(0, 1), {}).rank == 0);

  // A shape that does not cover the span, a negative extent, a rank beyond the limit.
  CHECK_THROWS_WITH(TensorView::of(buffer.span(), {5, 5}), Catch::Contains("does not cover the span's 24"));
  CHECK_THROWS_AS(TensorView::of(buffer.span(), {-1, -24}), Error);
  CHECK_THROWS_AS(TensorView::of(buffer.span(), {1, 2, 3, 4, 1}), Error);
  // span<T>() of the wrong type or of a strided view.
  CHECK_THROWS_WITH(view.span<std::int32_t>(), Catch::Contains("holds float32, not int32"));
  TensorView transposed = TensorView::of(buffer.span(), {4, 6});
  transposed.shape = {6, 4};
  transposed.strides = {1, 6};
  CHECK_FALSE(transposed.is_contiguous());
  CHECK(transposed.describe() == "float32[6][4] on cpu with strides (1, 6)");
  CHECK_THROWS_WITH(transposed.span<float>(), Catch::Contains("not contiguous"));
}

TEST_CASE("contiguity ignores the strides of extents of 1, as torch does", "[tensor_view]") {
  DeviceBuffer<double> buffer(Device::cpu(), 8);
  TensorView view = TensorView::of(buffer.span(), {1, 8, 1});
  view.strides = {999, 1, 42};
  CHECK(view.is_contiguous());
  view.strides = {8, 2, 1};
  CHECK_FALSE(view.is_contiguous());
}

TEST_CASE("require_matches names what was expected and what differs", "[tensor_view]") {
  DeviceBuffer<std::int32_t> buffer(Device::cpu(), 12);
  const TensorView view = TensorView::of(buffer.span(), {3, 4});
  const TensorSpec exact{DType::Int32, Device::cpu(), {3, 4}};
  CHECK_NOTHROW(require_matches(view, exact, "actions"));
  CHECK_NOTHROW(require_matches(view, {DType::Int32, Device::cpu(), {kAnyExtent, 4}}, "actions"));
  CHECK_NOTHROW(require_matches(view, TensorSpec::like(view), "actions"));
  CHECK(TensorSpec{DType::Int32, Device::cuda(1), {kAnyExtent, 4}}.describe() == "contiguous int32[*][4] on cuda:1");

  CHECK(input_error([&] {
          require_matches(view, {DType::Float32, Device::cpu(), {3, 4}}, "actions");
        }) == "actions: expected contiguous float32[3][4] on cpu, got int32[3][4] on cpu (dtype differs)");
  CHECK(input_error([&] {
          require_matches(view, {DType::Int32, Device::cuda(0), {3, 4}}, "actions");
        }) == "actions: expected contiguous int32[3][4] on cuda:0, got int32[3][4] on cpu (device differs)");
  CHECK(input_error([&] {
          require_matches(view, {DType::Int32, Device::cpu(), {12}}, "actions");
        }) == "actions: expected contiguous int32[12] on cpu, got int32[3][4] on cpu (rank differs)");
  CHECK(input_error([&] {
          require_matches(view, {DType::Int32, Device::cpu(), {3, 5}}, "actions");
        }) ==
        "actions: expected contiguous int32[3][5] on cpu, got int32[3][4] on cpu (extent of dimension 1 differs)");
  TensorView strided = view;
  strided.shape = {4, 3};
  strided.strides = {1, 4};
  CHECK(input_error([&] {
          require_matches(strided, {DType::Int32, Device::cpu(), {4, 3}}, "actions");
        }) ==
        "actions: expected contiguous int32[4][3] on cpu, got int32[4][3] on cpu with strides (1, 4) "
        "(not contiguous (make a contiguous copy first))");
  TensorView null_data = view;
  null_data.data = nullptr;
  CHECK_THAT(input_error([&] { require_matches(null_data, exact, "actions"); }), Catch::EndsWith("(no data pointer)"));
  TensorView misaligned = view;
  misaligned.data = static_cast<char*>(view.data) + 2;
  CHECK_THAT(input_error([&] { require_matches(misaligned, exact, "actions"); }),
             Catch::EndsWith("(data pointer not aligned to its element size)"));
}

TEST_CASE("find_view lists the names there are when one is missing", "[tensor_view]") {
  DeviceBuffer<float> buffer(Device::cpu(), 4);
  const std::vector<NamedTensorView> views = {{"obs", TensorView::of(buffer.span(), {4})},
                                              {"reward", TensorView::of(buffer.span(), {2, 2})}};
  CHECK(find_view(views, "reward").rank == 2);
  CHECK(input_error([&] { find_view(views, "rewards"); }) == "no tensor view named 'rewards' (there are: obs, reward)");
}

TEST_CASE("the engine's step outputs, actions and state have the documented shapes", "[tensor_view]") {
  constexpr std::int64_t n = 6;
  for (const std::string& name : scenario_names()) {
    INFO(name);
    const ScenarioSpec& spec = scenario_spec(name);
    std::unique_ptr<Engine> engine = make_engine(name, Device::cpu(), n, 3);
    DeviceBuffer<float> obs(Device::cpu(), n * spec.obs_dim), final_obs(Device::cpu(), n * spec.obs_dim);
    DeviceBuffer<float> reward(Device::cpu(), n);
    DeviceBuffer<std::uint8_t> terminated(Device::cpu(), n), truncated(Device::cpu(), n);
    const StepViews out{obs.span(), reward.span(), terminated.span(), truncated.span(), final_obs.span()};

    const std::vector<NamedTensorView> step = step_tensor_views(spec, out);
    REQUIRE(step.size() == 5);
    CHECK(shape_of(find_view(step, "obs")) == std::vector<std::int64_t>{n, spec.obs_dim});
    CHECK(strides_of(find_view(step, "obs")) == std::vector<std::int64_t>{spec.obs_dim, 1});
    CHECK(find_view(step, "obs").data == obs.data());
    CHECK(shape_of(find_view(step, "reward")) == std::vector<std::int64_t>{n});
    CHECK(find_view(step, "terminated").dtype == DType::UInt8);
    CHECK(find_view(step, "truncated").data == truncated.data());
    CHECK(find_view(step, "final_obs").data == final_obs.data());
    CHECK(step_tensor_views(spec, {obs.span(), reward.span(), terminated.span(), truncated.span(), {}}).size() == 4);
    CHECK_THROWS(
        step_tensor_views(spec, {obs.span().slice(0, 1), reward.span(), terminated.span(), truncated.span(), {}}));

    DeviceBuffer<std::int32_t> discrete(Device::cpu(), n);
    DeviceBuffer<float> continuous(Device::cpu(), n * std::max(spec.action_dim, 1));
    const TensorView actions = action_tensor_view(spec, {discrete.cspan(), continuous.cspan()});
    if (spec.action_kind == ActionKind::Discrete) {
      CHECK(actions.dtype == DType::Int32);
      CHECK(shape_of(actions) == std::vector<std::int64_t>{n});
      CHECK(actions.data == discrete.data());
    } else {
      CHECK(actions.dtype == DType::Float32);
      CHECK(shape_of(actions) == std::vector<std::int64_t>{n, spec.action_dim});
      CHECK(actions.data == continuous.data());
    }

    const std::vector<NamedTensorView> state = engine_state_views(*engine);
    CHECK(shape_of(find_view(state, "states")) == std::vector<std::int64_t>{n, spec.state_dim});
    CHECK(find_view(state, "states").data == engine->states().data);
    CHECK(shape_of(find_view(state, "params")) == std::vector<std::int64_t>{n, spec.param_count()});
    CHECK(find_view(state, "episode_steps").dtype == DType::Int32);
    CHECK(find_view(state, "episode_returns").data == engine->episode_returns().data);
    CHECK(find_view(state, "rng_offsets").dtype == DType::UInt64);
    CHECK(shape_of(find_view(state, "rng_offsets")) == std::vector<std::int64_t>{n});
  }
}

TEST_CASE("every rollout field is a view of its buffer with the documented shape", "[tensor_view]") {
  constexpr std::int64_t t = 5, n = 3, d = 4;
  const rl::RolloutStorage rollout(Device::cpu(), t, n, d);
  const std::vector<NamedTensorView> views = rollout.tensor_views();
  struct Expected {
    const char* name;
    void* data;
    DType dtype;
    std::vector<std::int64_t> shape, strides;
  };
  const std::vector<Expected> expected = {{"obs", rollout.obs(0), DType::Float32, {t + 1, n, d}, {n * d, d, 1}},
                                          {"actions", rollout.actions(0), DType::Int32, {t, n}, {n, 1}},
                                          {"logprob", rollout.logprob(0), DType::Float32, {t, n}, {n, 1}},
                                          {"value", rollout.value(0), DType::Float32, {t + 1, n}, {n, 1}},
                                          {"reward", rollout.reward(0), DType::Float32, {t, n}, {n, 1}},
                                          {"terminated", rollout.terminated(0), DType::UInt8, {t, n}, {n, 1}},
                                          {"truncated", rollout.truncated(0), DType::UInt8, {t, n}, {n, 1}},
                                          {"adv", rollout.advantage(0), DType::Float32, {t, n}, {n, 1}},
                                          {"ret", rollout.returns(0), DType::Float32, {t, n}, {n, 1}},
                                          {"final_obs", rollout.final_obs(), DType::Float32, {n, d}, {d, 1}},
                                          {"final_value", rollout.final_value(0), DType::Float32, {t, n}, {n, 1}}};
  REQUIRE(views.size() == expected.size());
  std::size_t bytes = 0;
  for (std::size_t k = 0; k < expected.size(); ++k) {
    INFO(expected[k].name);
    CHECK(views[k].name == expected[k].name);
    CHECK(views[k].view.data == expected[k].data);
    CHECK(views[k].view.dtype == expected[k].dtype);
    CHECK(shape_of(views[k].view) == expected[k].shape);
    CHECK(strides_of(views[k].view) == expected[k].strides);
    bytes += allocation_bytes(static_cast<std::size_t>(views[k].view.numel()) * dtype_size(views[k].view.dtype));
  }
  // Row t of a field is where the rollout's own accessor puts it: obs[t] is rollout.obs(t).
  const TensorView& obs = find_view(views, "obs");
  CHECK(static_cast<float*>(obs.data) + 2 * obs.strides[0] == rollout.obs(2));
  // The views cover every byte the storage holds, each rounded up to its 256-byte-aligned slot.
  CHECK(bytes == rollout.device_bytes());
}

TEST_CASE("every parameter slice is a view at its table offset", "[tensor_view]") {
  const rl::ActorCritic net(4, 2, rl::NetworkConfig{});
  const rl::ParamTable& table = net.table();
  DeviceBuffer<float> params(Device::cpu(), table.total());
  const std::vector<NamedTensorView> views = table.tensor_views(params.span());
  REQUIRE(static_cast<int>(views.size()) == table.count());
  std::int64_t covered = 0;
  for (int k = 0; k < table.count(); ++k) {
    const rl::ParamSlice& slice = table[k];
    INFO(slice.name);
    CHECK(views[static_cast<std::size_t>(k)].name == slice.name);
    const TensorView& view = views[static_cast<std::size_t>(k)].view;
    CHECK(view.data == params.data() + slice.offset);
    CHECK(shape_of(view) == std::vector<std::int64_t>{slice.rows, slice.cols});
    CHECK(strides_of(view) == std::vector<std::int64_t>{slice.cols, 1});
    covered += view.numel();
  }
  CHECK(covered == table.parameter_count());
  CHECK(shape_of(find_view(views, "actor.0.weight")) == std::vector<std::int64_t>{64, 4});
  DeviceBuffer<double> wrong_size(Device::cpu(), table.total() + 1);
  CHECK_THROWS_WITH(table.tensor_views(wrong_size.span()), Catch::Contains("is not carved by a table"));
}
