// Training from pixels (observation = "pixels"): the PPO gradient of a minibatch gathered from the frame
// store, through the pixel ActorCritic's PpoGradient, against central finite differences; and through
// the program, a short run's metrics and checkpoint that `surge eval` reads, a resume that is bit-exact,
// the memory plan, and the one-line refusals of what is not wired yet.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "rl/actor_critic.hpp"
#include "rl/io/checkpoint.hpp"
#include "rl/io/resume_state.hpp"
#include "rl/ppo_loss.hpp"
#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"
#include "tests/support/finite_difference.hpp"
#include "tests/support/ppo_gradient_batch.hpp"
#include "tests/support/run_surge.hpp"
#include "tests/support/scratch_folder.hpp"
#include "tools/cli/io.hpp"

using namespace surge;
using surge::testing::Result;
using surge::testing::run_surge;
using surge::testing::ScratchFolder;

namespace {

// A short CartPole run on 36 x 36 grey frames, 2 to a stack, through a tiny custom-sized "small" encoder.
const std::string kPixelRun =
    "train --scenario cartpole --device cpu --set observation=pixels --set frame_size=36 --set frame_stack=2 "
    "--set encoder=small --num-envs 4 --num-steps 16 --seed 5 ";

// metrics.csv by column name, less the two columns that measure the clock.
std::map<std::string, std::vector<std::string>> metrics_without_clock(const std::string& dir) {
  const cli::CsvTable table = cli::CsvTable::read(dir + "/metrics.csv");
  std::map<std::string, std::vector<std::string>> columns;
  for (std::size_t c = 0; c < table.header.size(); ++c) {
    const std::string& name = table.header[c];
    if (name == "wall_time_s" || name == "sps") continue;
    for (const auto& row : table.rows) columns[name].push_back(row.at(c));
  }
  return columns;
}

void check_refused(const Result& r, const std::string& what) {
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(surge::testing::line_count(r.err) == 1);
  CHECK(r.err.rfind("surge train: ", 0) == 0);
  CHECK(r.err.find(what) != std::string::npos);
}

}  // namespace

TEST_CASE("the pixel PPO gradient of a minibatch gathered from the frame store matches finite differences",
          "[pixels][gradient]") {
  const Device cpu = Device::cpu();
  Stream stream(cpu);
  const std::int64_t envs = 3, steps = 5, rows = 8;
  const int stack = 2, side = 36;
  auto engine = make_engine("cartpole", cpu, envs, 11);
  PixelFrameStore store(*engine, steps, FrameSize{side, side, 1}, stack);
  store.begin(stream);
  // A few steps of alternating actions, so that stacks hold different frames (and the odd reset).
  DeviceBuffer<float> obs(cpu, envs * 4), reward(cpu, envs), final_obs(cpu, envs * 4);
  DeviceBuffer<std::uint8_t> terminated(cpu, envs), truncated(cpu, envs);
  DeviceBuffer<std::int32_t> actions(cpu, envs);
  for (std::int64_t t = 0; t < steps; ++t) {
    for (std::int64_t i = 0; i < envs; ++i) actions.data()[i] = static_cast<std::int32_t>((t + i) % 2);
    store.step(t, ActionView{actions.cspan(), {}},
               StepViews{obs.span(), reward.span(), terminated.span(), truncated.span(), final_obs.span()}, stream);
  }
  std::vector<std::int64_t> indices;
  for (std::int64_t j = 0; j < rows; ++j) indices.push_back((j * 7 + 2) % (steps * envs));
  DeviceBuffer<std::int64_t> index_buffer(cpu, rows);
  std::copy(indices.begin(), indices.end(), index_buffer.data());
  DeviceBuffer<std::uint8_t> stacks(cpu, rows * store.stack_bytes());
  store.gather(index_buffer.cspan(), stacks.span(), stream);
  stream.synchronize();

  // The trainer's network for these frames, with a trunk small enough to check every parameter.
  rl::TrainConfig config;
  const rl::EncoderConfig encoder{"custom", {{4, 8, 4}, {4, 4, 2}}, 12};
  const rl::ActorCritic net(4, ActionKind::Discrete, 2, config, rl::FrameShape{side, side, stack}, encoder);
  REQUIRE(net.pixels());
  REQUIRE(net.table()[0].name == "encoder.conv0.weight");
  std::vector<double> params = net.initial_parameters(3);
  Rng rng(9, 4, 0);
  // Biases and heads non-zero too; the trunk's biases positive enough that most ReLUs pass on frames that
  // are mostly bright background.
  for (const auto& slice : net.table().slices()) {
    const bool trunk_bias = slice.name.rfind("encoder.", 0) == 0 && slice.name.find(".bias") != std::string::npos;
    for (std::int64_t j = 0; j < slice.size(); ++j)
      params[static_cast<std::size_t>(slice.offset + j)] += 0.05 * testing::normal(rng) + (trunk_bias ? 1.0 : 0.0);
  }

  rl::PpoGradient<double> workspace(cpu, net, rows);
  DeviceBuffer<double> device_params(cpu, static_cast<std::int64_t>(params.size()));
  std::vector<double> logits(static_cast<std::size_t>(rows * 2)), values(static_cast<std::size_t>(rows));
  std::copy(params.begin(), params.end(), device_params.data());
  const double* features = workspace.encode(stream, device_params.data(), stacks.data(), rows);
  workspace.forward(stream, device_params.data(), features, rows, logits.data(), values.data());

  std::vector<std::int32_t> taken;
  std::vector<double> old_logprob, old_value, advantage, returns;
  for (std::int64_t i = 0; i < rows; ++i) {
    const double* row = logits.data() + i * 2;
    const auto action = static_cast<std::int32_t>(i % 2);
    const double top = std::max(row[0], row[1]);
    const double logp = row[action] - top - std::log(std::exp(row[0] - top) + std::exp(row[1] - top));
    const auto estimates = testing::around_the_clip_range(i, logp, values[static_cast<std::size_t>(i)]);
    taken.push_back(action);
    old_logprob.push_back(estimates.old_logprob);
    old_value.push_back(estimates.old_value);
    returns.push_back(estimates.returns);
    advantage.push_back(testing::normal(rng) + 0.3);
  }
  const rl::MinibatchView<double> minibatch{
      rows,           nullptr, taken.data(), old_logprob.data(), old_value.data(), advantage.data(),
      returns.data(), nullptr, stacks.data()};
  rl::PpoLossConfig loss_config;
  loss_config.ent_coef = 0.05;

  std::vector<double> terms(rl::kLossTermCount);
  auto loss_at = [&](const std::vector<double>& p) {
    std::copy(p.begin(), p.end(), device_params.data());
    std::vector<double> unused(p.size());
    workspace.compute(stream, loss_config, minibatch, device_params.data(), unused.data(), terms.data());
    stream.synchronize();
    return rl::total_loss(loss_config, terms.data(), rows);
  };
  std::vector<double> grads(params.size(), 0.0);
  std::copy(params.begin(), params.end(), device_params.data());
  workspace.compute(stream, loss_config, minibatch, device_params.data(), grads.data(), terms.data());
  stream.synchronize();

  // Every parameter against its central difference; per slice, how many are clearly non-zero (a slice of
  // zero gradients would agree vacuously).
  const double h = 1e-7;
  std::map<std::string, int> live;
  for (const auto& slice : net.table().slices()) {
    for (std::int64_t j = 0; j < slice.size(); ++j) {
      const auto index = static_cast<std::size_t>(slice.offset + j);
      const double numeric = testing::central_difference(loss_at, params, slice.offset + j, h);
      INFO(slice.name << "[" << j << "]: analytic " << grads[index] << ", finite difference " << numeric);
      CHECK(std::abs(grads[index] - numeric) <= 1e-6 + 1e-5 * std::abs(numeric));
      live[slice.name] += std::abs(grads[index]) > 1e-6 ? 1 : 0;
    }
    INFO(slice.name << ": " << live[slice.name] << " of " << slice.size() << " gradients are non-zero");
    CHECK(2 * live[slice.name] > slice.size());
  }
}

TEST_CASE("a pixel run writes metrics and a checkpoint that surge eval plays from pixels", "[pixels][cli]") {
  ScratchFolder dir("pixel_train_run");
  const std::string out = dir / "run";
  Result r = run_surge(kPixelRun + "--total-steps 256 --out " + out);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(metrics_without_clock(out).at("iteration").size() == 4);
  const rl::Checkpoint checkpoint = rl::read_checkpoint(out + "/checkpoint.h5");
  CHECK(checkpoint.config.pixel_observations());
  CHECK(checkpoint.config.encoder == "small");
  const rl::ActorCritic net = rl::checkpoint_network(checkpoint);
  REQUIRE(net.pixels());
  CHECK(net.encoder()->frame().channels == 2);
  CHECK(static_cast<std::int64_t>(checkpoint.params.size()) == net.table().total());
  bool has_encoder = false;
  for (const auto& slice : net.table().slices()) has_encoder = has_encoder || slice.name == "encoder.dense.weight";
  CHECK(has_encoder);

  r = run_surge("eval --checkpoint " + out + "/checkpoint.h5 --device cpu --episodes 3");
  INFO(r.output());
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("surge eval: cartpole, 3 episodes (greedy)") != std::string::npos);
}

TEST_CASE("a resumed pixel run is bit-identical to one run straight through", "[pixels][cli]") {
  ScratchFolder dir("pixel_train_resume");
  const std::string first = dir / "first", straight = dir / "straight";
  const std::string total = "--total-steps " + std::to_string(8 * 64) + " ";
  Result r = run_surge(kPixelRun + total + "--stop-after 4 --out " + first);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  r = run_surge("train --device cpu --resume " + first + "/checkpoint.h5");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("resumed after iteration 4") != std::string::npos);
  r = run_surge(kPixelRun + total + "--out " + straight);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);

  const auto resumed_metrics = metrics_without_clock(first);
  REQUIRE(resumed_metrics.at("iteration").size() == 8);
  REQUIRE(resumed_metrics.size() == 15);
  CHECK(resumed_metrics == metrics_without_clock(straight));
  const rl::Checkpoint a = rl::read_checkpoint(first + "/checkpoint.h5"),
                       b = rl::read_checkpoint(straight + "/checkpoint.h5");
  CHECK(a.params == b.params);
  CHECK(a.adam_m == b.adam_m);
  CHECK(a.adam_v == b.adam_v);
  const rl::ResumeState sa = rl::read_resume_state(first + "/checkpoint.h5"),
                        sb = rl::read_resume_state(straight + "/checkpoint.h5");
  REQUIRE(sa.trainer.size() == sb.trainer.size());
  bool carried = false;
  for (std::size_t k = 0; k < sa.trainer.size(); ++k) {
    INFO(sa.trainer[k].name);
    if (sa.trainer[k].name == "metrics") continue;  // holds the clock columns
    CHECK(sa.trainer[k].bytes == sb.trainer[k].bytes);
    carried = carried || sa.trainer[k].name == "carried_frames";
  }
  CHECK(carried);  // the frames the next stacks reach back to are part of the state
}

TEST_CASE("surge train --dry-run shows the frame store and the encoder's buffers", "[pixels][cli]") {
  const Result r = run_surge(kPixelRun + "--dry-run");
  INFO(r.output());
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("pixels.frames") != std::string::npos);
  CHECK(r.out.find("workspace.encoder_activations") != std::string::npos);
  CHECK(r.out.find("pixels.minibatch_stacks") != std::string::npos);
}

TEST_CASE("what pixel training does not do yet is refused in one line, nothing written", "[pixels][cli]") {
  ScratchFolder dir("pixel_train_refusals");
  const std::string out = dir / "run";
  check_refused(run_surge(kPixelRun + "--set encoder=huge --out " + out), "encoder");
  check_refused(run_surge(kPixelRun + "--set normalize_obs=true --out " + out), "normalize_obs");
  CHECK_FALSE(std::filesystem::exists(out));
}
