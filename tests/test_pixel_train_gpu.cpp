// Pixel training on CUDA against its CPU twin: stacks gathered on the device from the same frames, the
// CNN encoder's cuDNN passes against the CPU encoder, a few training iterations from the same seed, a
// replayed CUDA graph against eager launches, and through the program the memory plan, a checkpoint that
// `surge eval` plays on either backend and a bit-exact resume. Skipped (exit 77) where no GPU is usable.
//
// Frames themselves are drawn on the device from states that differ from the CPU's by the last bits of
// sinf/cosf, so a few edge pixels differ by a level (tests/test_pixel_obs_gpu.cpp bounds that); what is
// byte for byte here is everything after the drawing: given the same stored frames, every stack.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "rl/cnn_encoder.hpp"
#include "rl/cnn_encoder_device.hpp"
#include "rl/device_graph.hpp"
#include "rl/io/checkpoint.hpp"
#include "rl/trainer.hpp"
#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"
#include "tests/support/run_surge.hpp"
#include "tests/support/scratch_folder.hpp"
#include "tools/cli/io.hpp"

using namespace surge;
using surge::testing::Result;
using surge::testing::run_surge;

namespace {

const Device kCpu = Device::cpu();
const Device kGpu = Device::cuda(0);

template <class T>
std::vector<T> host_copy(const T* pointer, std::int64_t count, Device device, const Stream& stream) {
  return to_host(Span<const T>{pointer, count, device}, stream);
}

// |gpu - cpu| <= 1e-5 sqrt(n) (1 + |cpu|): tests/test_conv_gpu.cpp's bound for two float sums of n terms
// rounded in different orders (their rounding grows as sqrt(n) for these random values), with n the
// longest reduction the compared values went through. An indexing error is off by O(1).
void check_close(const std::vector<float>& gpu, const std::vector<float>& cpu, double n, const char* what) {
  REQUIRE(gpu.size() == cpu.size());
  const double tolerance = 1e-5 * std::sqrt(n);
  std::size_t bad = 0, nonzero = 0;
  double worst = 0.0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const double gap = std::abs(double(gpu[i]) - double(cpu[i]));
    worst = std::max(worst, gap);
    bad += gap > tolerance * (1.0 + std::abs(cpu[i])) ? 1 : 0;
    nonzero += cpu[i] != 0.0f ? 1 : 0;
  }
  INFO(what << ": worst difference " << worst << " over " << cpu.size() << " values, tolerance " << tolerance);
  CHECK(bad == 0);
  CHECK(nonzero * 4 > cpu.size());
}

// The pixel run the trainer tests compare: 36 x 36 grey frames, 2 to a stack, the small encoder.
rl::TrainConfig pixel_config(bool graph) {
  rl::TrainConfig config;
  for (const char* setting :
       {"observation=pixels", "frame_size=36", "frame_stack=2", "encoder=small", "num_envs=16", "num_steps=16",
        "num_minibatches=4", "update_epochs=2", "total_steps=768", "learning_rate=1e-3", "seed=5"})
    rl::apply_config_setting(config, setting);
  config.cuda_graph = graph;
  return config;
}

// A pixel trainer with its engine and frame store, on either backend.
struct PixelTrainer {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<PixelFrameStore> frames;
  std::unique_ptr<rl::Trainer> trainer;
  std::vector<rl::IterationMetrics> metrics;
  PixelTrainer(Device device, const rl::TrainConfig& config, int iterations)
      : engine(make_engine("cartpole", device, config.num_envs, config.seed)),
        frames(
            make_frame_store(*engine, true, config.num_steps, config.frame_size, config.grayscale, config.frame_stack)),
        trainer(std::make_unique<rl::Trainer>(*engine, config, rl::single_process(), frames.get())) {
    for (int k = 0; k < iterations; ++k) trainer->iterate();
    metrics = trainer->drain();
  }
  std::vector<float> parameters() const { return to_host(trainer->parameters(), trainer->stream()); }
};

std::map<std::string, std::vector<std::string>> metrics_without_clock(const std::string& dir) {
  const cli::CsvTable table = cli::CsvTable::read(dir + "/metrics.csv");
  std::map<std::string, std::vector<std::string>> columns;
  for (std::size_t c = 0; c < table.header.size(); ++c)
    if (table.header[c] != "wall_time_s" && table.header[c] != "sps")
      for (const auto& row : table.rows) columns[table.header[c]].push_back(row.at(c));
  return columns;
}

const std::string kCudaPixelRun =
    "train --scenario cartpole --device cuda --set observation=pixels --set frame_size=36 --set frame_stack=2 "
    "--set encoder=small --num-envs 8 --num-steps 16 --seed 5 ";

}  // namespace

TEST_CASE("stacks gathered on CUDA from the CPU's frames are byte for byte the CPU's", "[gpu][pixels]") {
  const std::int64_t n = 64, t = 12, frame_bytes = n * 36 * 36;
  const int stack = 4;
  const Stream cpu(kCpu), gpu(kGpu);
  auto cpu_engine = make_engine("cartpole", kCpu, n, 7), gpu_engine = make_engine("cartpole", kGpu, n, 7);
  PixelFrameStore cpu_store(*cpu_engine, t, FrameSize{36, 36, 1}, stack),
      gpu_store(*gpu_engine, t, FrameSize{36, 36, 1}, stack);
  cpu_store.begin(cpu);
  gpu_store.begin(gpu);
  // Random CartPole steps on the CPU: resets at different rows, so stacks repeat their first frames.
  DeviceBuffer<std::int32_t> actions(kCpu, n);
  DeviceBuffer<float> vectors(kCpu, 3 * n * 4);
  DeviceBuffer<std::uint8_t> flags(kCpu, 2 * n);
  const StepViews views{vectors.span().slice(0, n * 4), vectors.span().slice(n * 4, n), flags.span().slice(0, n),
                        flags.span().slice(n, n), vectors.span().slice(2 * n * 4, n * 4)};
  for (std::int64_t step = 0; step < t; ++step) {
    cpu_engine->random_actions(actions.span(), {}, cpu);
    cpu_store.step(step, {actions.cspan(), {}}, views, cpu);
  }
  cpu.synchronize();
  // Every stored row and flag and the final frames, onto the device store.
  copy_bytes(gpu_store.frames(-(stack - 1)), kGpu, cpu_store.frames(-(stack - 1)), kCpu,
             static_cast<std::size_t>((t + stack) * frame_bytes), gpu);
  copy_bytes(gpu_store.first_flags(-(stack - 1)), kGpu, cpu_store.first_flags(-(stack - 1)), kCpu,
             static_cast<std::size_t>((t + stack) * n), gpu);
  copy_bytes(gpu_store.final_frames(), kGpu, cpu_store.final_frames(), kCpu, static_cast<std::size_t>(frame_bytes),
             gpu);
  DeviceBuffer<std::uint8_t> cpu_stacks(kCpu, frame_bytes * stack), gpu_stacks(kGpu, cpu_stacks.size());
  auto same_stacks = [&] { return to_host(gpu_stacks.cspan(), gpu) == to_host(cpu_stacks.cspan(), cpu); };
  for (std::int64_t row = 0; row <= t; ++row) {
    INFO("row " << row);
    cpu_store.gather_row(row, cpu_stacks.span(), cpu);
    gpu_store.gather_row(row, gpu_stacks.span(), gpu);
    REQUIRE(same_stacks());
  }
  cpu_store.gather_final(t - 1, cpu_stacks.span(), cpu);
  gpu_store.gather_final(t - 1, gpu_stacks.span(), gpu);
  CHECK(same_stacks());
  std::vector<std::int64_t> indices;
  for (std::int64_t j = 0; j < n; ++j) indices.push_back((j * 37 + 5) % (t * n));
  DeviceBuffer<std::int64_t> gpu_indices(kGpu, n);
  from_host(gpu_indices.span(), indices, gpu);
  cpu_store.gather(Span<const std::int64_t>{indices.data(), n, kCpu}, cpu_stacks.span(), cpu);
  gpu_store.gather(gpu_indices.cspan(), gpu_stacks.span(), gpu);
  CHECK(same_stacks());
}

TEST_CASE("the encoder's cuDNN passes match the CPU encoder, eagerly and replayed from a graph", "[gpu][cnn]") {
  const auto [name, side, channels, rows] = GENERATE(std::make_tuple(std::string("nature"), 84, 4, std::int64_t{32}),
                                                     std::make_tuple(std::string("small"), 48, 2, std::int64_t{70}));
  INFO(name << " at " << side << "x" << side << "x" << channels << ", " << rows << " rows");
  rl::ParamTable table;
  const rl::CnnEncoder encoder(table, "encoder", rl::FrameShape{side, side, channels}, rl::encoder_config(name));
  std::vector<double> initial(static_cast<std::size_t>(table.total()), 0.0);
  Rng rng(17, 0, 0);
  encoder.initialize(initial, rng);
  std::vector<float> params;
  for (std::size_t i = 0; i < initial.size(); ++i) params.push_back(static_cast<float>(initial[i] + 0.01 * (i % 5)));
  std::vector<std::uint8_t> frames(static_cast<std::size_t>(rows * encoder.frame_size()));
  for (auto& pixel : frames) pixel = static_cast<std::uint8_t>(rng.next_u32() & 255u);
  std::vector<float> d_features(static_cast<std::size_t>(rows * encoder.feature_dim()));
  for (auto& d : d_features) d = rng.uniform(-1.0f, 1.0f);

  // The CPU encoder (im2col + BLAS).
  const Stream cpu(kCpu);
  std::vector<float> activations(static_cast<std::size_t>(encoder.activation_size(rows)));
  std::vector<float> scratch(static_cast<std::size_t>(encoder.scratch_size(rows)));
  std::vector<float> features(d_features.size()), grads(params.size(), 0.0f);
  rl::cnn_forward(cpu, encoder, params.data(), frames.data(), rows, activations.data(), scratch.data(),
                  features.data());
  rl::cnn_backward(cpu, encoder, params.data(), frames.data(), rows, activations.data(), features.data(),
                   d_features.data(), grads.data(), scratch.data());

  // The same through cuDNN.
  const Stream gpu(kGpu);
  const rl::CnnDeviceConvs convs(kGpu, encoder, rows, false, rl::conv_workspace_bytes(encoder, rows));
  INFO("cuDNN algorithms: " << convs.describe());
  CHECK(convs.workspace_bytes() <= rl::conv_workspace_bytes(encoder, rows));
  DeviceBuffer<float> d_params(kGpu, table.total()), d_activations(kGpu, encoder.activation_size(rows)),
      d_scratch(kGpu, rl::device_scratch_size(encoder, rows)), d_out(kGpu, rows * encoder.feature_dim()),
      d_in(kGpu, rows * encoder.feature_dim()), d_grads(kGpu, table.total());
  DeviceBuffer<std::uint8_t> d_frames(kGpu, rows * encoder.frame_size()),
      workspace(kGpu, static_cast<std::int64_t>(std::max<std::size_t>(convs.workspace_bytes(), 1)));
  from_host(d_params.span(), params, gpu);
  from_host(d_frames.span(), frames, gpu);
  from_host(d_in.span(), d_features, gpu);
  // Zeros, as the CPU's gradients started: the table's padding between slices stays 0 on both sides.
  from_host(d_grads.span(), std::vector<float>(grads.size(), 0.0f), gpu);
  auto passes = [&] {
    rl::cnn_forward_device(gpu, encoder, convs, d_params.data(), d_frames.data(), rows, d_activations.data(),
                           d_scratch.data(), workspace.data(), d_out.data());
    rl::cnn_backward_device(gpu, encoder, convs, d_params.data(), d_frames.data(), rows, d_activations.data(),
                            d_out.data(), d_in.data(), d_grads.data(), d_scratch.data(), workspace.data());
  };
  passes();
  const std::vector<float> gpu_features = to_host(d_out.cspan(), gpu), gpu_grads = to_host(d_grads.cspan(), gpu);
  // n: the longest reduction behind the values, backward-filter's rows x positions of the first layer.
  const double n = static_cast<double>(rows * encoder.conv(0).positions());
  check_close(gpu_features, features, n, "features");
  check_close(gpu_grads, grads, n, "gradients");

  // Replayed from a captured graph: the same algorithms on the same inputs, the same bits.
  zero_bytes(d_out.data(), kGpu, static_cast<std::size_t>(d_out.size()) * sizeof(float), gpu);
  zero_bytes(d_grads.data(), kGpu, static_cast<std::size_t>(d_grads.size()) * sizeof(float), gpu);
  rl::IterationGraph graph(gpu);
  graph.capture(passes);
  graph.launch();
  CHECK(to_host(d_out.cspan(), gpu) == gpu_features);
  CHECK(to_host(d_grads.cspan(), gpu) == gpu_grads);
}

TEST_CASE("pixel training on CUDA follows the CPU twin for the first iteration and stays close", "[gpu][pixels]") {
  const PixelTrainer cpu(kCpu, pixel_config(false), 3), gpu(kGpu, pixel_config(false), 3);
  REQUIRE(cpu.metrics.size() == 3);
  REQUIRE(gpu.metrics.size() == 3);
  // The first rollout acts on the same initial parameters: frames a level apart at a few edge pixels
  // move the logits by far less than a sampling tie needs, so the episodes agree.
  const rl::IterationMetrics &a = cpu.metrics[0], &b = gpu.metrics[0];
  CHECK(b.episodes == a.episodes);
  CHECK(b.return_last100 == Approx(a.return_last100));
  CHECK(b.policy_loss == Approx(a.policy_loss).margin(1e-3));
  CHECK(b.value_loss == Approx(a.value_loss).epsilon(1e-2));
  CHECK(b.entropy == Approx(a.entropy).epsilon(1e-3));
  // Later iterations may act differently where a near-tie flips, but learn at the same pace.
  for (std::size_t k = 1; k < 3; ++k) {
    INFO("iteration " << k + 1);
    CHECK(gpu.metrics[k].learning_rate == cpu.metrics[k].learning_rate);
    CHECK(gpu.metrics[k].entropy == Approx(cpu.metrics[k].entropy).epsilon(2e-2));
  }
  // An Adam step moves a parameter by at most lr (1 - beta1) / sqrt(1 - beta2) = 3.17 lr, so after the
  // same number of steps two runs cannot be further apart than twice that many.
  const rl::TrainConfig config = pixel_config(false);
  const double steps = static_cast<double>(3 * config.update_epochs * config.num_minibatches);
  const double drift = 2 * steps * config.learning_rate * (1 - config.beta1) / std::sqrt(1 - config.beta2);
  const std::vector<float> pa = cpu.parameters(), pb = gpu.parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) REQUIRE(std::abs(pa[i] - pb[i]) <= drift);
}

TEST_CASE("a replayed CUDA graph trains from pixels exactly as eager launches do", "[gpu][pixels][graph]") {
  const PixelTrainer eager(kGpu, pixel_config(false), 3), graph(kGpu, pixel_config(true), 3);
  CHECK_FALSE(eager.trainer->uses_graph());
  CHECK(graph.trainer->uses_graph());
  CHECK(eager.parameters() == graph.parameters());
  REQUIRE(graph.metrics.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(graph.metrics[k].policy_loss == eager.metrics[k].policy_loss);
    CHECK(graph.metrics[k].return_last100 == eager.metrics[k].return_last100);
  }
}

TEST_CASE("surge train --device cuda from pixels: the plan, a checkpoint both backends play, a bit-exact resume",
          "[gpu][pixels][cli]") {
  Result r = run_surge(kCudaPixelRun + "--dry-run");
  INFO(r.output());
  REQUIRE(r.exit_code == 0);
  for (const char* buffer : {"pixels.frames", "pixels.first", "workspace.cudnn", "workspace.encoder_scratch"})
    CHECK(r.out.find(buffer) != std::string::npos);

  testing::ScratchFolder dir("pixel_train_gpu");
  const std::string first = dir / "first", straight = dir / "straight";
  const std::string total = "--total-steps " + std::to_string(6 * 8 * 16) + " ";
  r = run_surge(kCudaPixelRun + total + "--stop-after 3 --out " + first);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  r = run_surge("train --device cuda --resume " + first + "/checkpoint.h5");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  r = run_surge(kCudaPixelRun + total + "--out " + straight);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(metrics_without_clock(first) == metrics_without_clock(straight));
  const rl::Checkpoint a = rl::read_checkpoint(first + "/checkpoint.h5"),
                       b = rl::read_checkpoint(straight + "/checkpoint.h5");
  CHECK(a.params == b.params);
  CHECK(a.adam_m == b.adam_m);
  CHECK(a.adam_v == b.adam_v);
  for (const char* device : {"cuda", "cpu"}) {
    r = run_surge("eval --checkpoint " + straight + "/checkpoint.h5 --device " + device + " --episodes 3");
    INFO(device << ": " << r.output());
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("surge eval: cartpole, 3 episodes (greedy)") != std::string::npos);
  }
}
