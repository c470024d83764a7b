// The CNN encoder's device passes (rl/cnn_encoder_device.hpp), the sequence of calls CUDA runs, here on
// the CPU backend with im2col layers: they must give cnn_forward's features and cnn_backward's gradients
// bit for bit (same GEMMs, same column chunks, the frames scaled to the same floats, the bias sums in the
// same order), and leave other slices alone. Also the workspace the memory plan holds for cuDNN, and the
// pixel minibatch's rows picked on the device against the permutation gather_minibatch follows.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "rl/cnn_encoder.hpp"
#include "rl/cnn_encoder_device.hpp"
#include "rl/conv_algorithm_choice.hpp"
#include "rl/pixel_minibatch.hpp"
#include "rl/shuffle.hpp"
#include "sim/error.hpp"
#include "sim/philox.hpp"

using namespace surge::rl;

namespace {

const surge::Device kCpu = surge::Device::cpu();

// An encoder with one more slice after it, which no encoder pass may touch.
struct Trunk {
  ParamTable table;
  CnnEncoder encoder;
  std::int64_t other;
  Trunk(FrameShape frame, const std::string& name)
      : encoder(table, "encoder", frame, encoder_config(name)), other(table[table.add("other", 3, 5)].offset) {}
};

// What one pass pair leaves: features, then the whole gradient vector.
struct PassResult {
  std::vector<float> features, grads;
};

struct Inputs {
  std::vector<float> params, d_features;
  std::vector<std::uint8_t> frames;
  Inputs(const Trunk& trunk, std::int64_t rows, std::uint64_t seed) {
    const CnnEncoder& encoder = trunk.encoder;
    std::vector<double> initial(static_cast<std::size_t>(trunk.table.total()), 0.0);
    surge::Rng rng(seed, 0, 0);
    encoder.initialize(initial, rng);
    // Non-zero biases, so that the bias paths and the ReLU masks both matter.
    for (std::size_t i = 0; i < initial.size(); ++i) params.push_back(static_cast<float>(initial[i] + 0.01 * (i % 5)));
    frames.resize(static_cast<std::size_t>(rows * encoder.frame_size()));
    for (auto& pixel : frames) pixel = static_cast<std::uint8_t>(rng.next_u32() & 255u);
    d_features.resize(static_cast<std::size_t>(rows * encoder.feature_dim()));
    for (auto& d : d_features) d = rng.uniform(-1.0f, 1.0f);
  }
};

constexpr float kUntouched = 7.0f;

PassResult cpu_passes(const CnnEncoder& encoder, const Inputs& in, std::int64_t rows) {
  const surge::Stream stream(kCpu);
  std::vector<float> activations(static_cast<std::size_t>(encoder.activation_size(rows)));
  std::vector<float> scratch(static_cast<std::size_t>(encoder.scratch_size(rows)));
  PassResult out{std::vector<float>(in.d_features.size()), std::vector<float>(in.params.size(), kUntouched)};
  cnn_forward(stream, encoder, in.params.data(), in.frames.data(), rows, activations.data(), scratch.data(),
              out.features.data());
  cnn_backward(stream, encoder, in.params.data(), in.frames.data(), rows, activations.data(), out.features.data(),
               in.d_features.data(), out.grads.data(), scratch.data());
  return out;
}

PassResult device_passes(const CnnEncoder& encoder, const Inputs& in, std::int64_t rows) {
  const surge::Stream stream(kCpu);
  const CnnDeviceConvs convs(kCpu, encoder, rows, false, conv_workspace_bytes(encoder, rows));
  std::vector<float> activations(static_cast<std::size_t>(encoder.activation_size(rows)));
  std::vector<float> scratch(static_cast<std::size_t>(device_scratch_size(encoder, rows)));
  std::vector<std::uint8_t> workspace(convs.workspace_bytes());
  PassResult out{std::vector<float>(in.d_features.size()), std::vector<float>(in.params.size(), kUntouched)};
  cnn_forward_device(stream, encoder, convs, in.params.data(), in.frames.data(), rows, activations.data(),
                     scratch.data(), workspace.data(), out.features.data());
  cnn_backward_device(stream, encoder, convs, in.params.data(), in.frames.data(), rows, activations.data(),
                      out.features.data(), in.d_features.data(), out.grads.data(), scratch.data(), workspace.data());
  return out;
}

void check_same(const std::vector<float>& device, const std::vector<float>& cpu, const char* what) {
  REQUIRE(device.size() == cpu.size());
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    INFO(what << " element " << i << ": device passes " << device[i] << ", cnn_forward/backward " << cpu[i]);
    REQUIRE(device[i] == cpu[i]);
    nonzero += cpu[i] != 0.0f;
  }
  CHECK(nonzero * 4 > cpu.size());  // not a comparison of zeros
}

}  // namespace

TEST_CASE("the device passes on the CPU give cnn_forward's features and cnn_backward's gradients", "[cnn]") {
  // small on a short batch; nature on more rows than one column chunk holds (kColumnRows).
  const auto [name, side, channels, rows] = GENERATE(std::make_tuple(std::string("small"), 36, 2, std::int64_t{3}),
                                                     std::make_tuple(std::string("nature"), 44, 4, std::int64_t{40}));
  INFO(name << " at " << side << "x" << side << "x" << channels << ", " << rows << " rows");
  const Trunk trunk(FrameShape{side, side, channels}, name);
  const Inputs in(trunk, rows, 21);
  const PassResult cpu = cpu_passes(trunk.encoder, in, rows), device = device_passes(trunk.encoder, in, rows);
  check_same(device.features, cpu.features, "features");
  check_same(device.grads, cpu.grads, "gradients");
  for (std::int64_t i = trunk.other; i < trunk.other + 15; ++i) CHECK(device.grads[i] == kUntouched);
}

TEST_CASE("device convolutions are made for one row count, on the CPU as im2col", "[cnn]") {
  const Trunk trunk(FrameShape{36, 36, 4}, "small");
  const CnnEncoder& encoder = trunk.encoder;
  const CnnDeviceConvs convs(kCpu, encoder, 6, false, conv_workspace_bytes(encoder, 6));
  CHECK(convs.rows() == 6);
  CHECK(convs.describe() == "conv0: im2col; conv1: im2col; conv2: im2col");
  CHECK(convs.workspace_bytes() == static_cast<std::size_t>(encoder.column_capacity(6)) * sizeof(float));
  const Inputs in(trunk, 5, 3);
  std::vector<float> buffer(1 << 20);
  CHECK_THROWS_AS(cnn_forward_device(surge::Stream(kCpu), encoder, convs, in.params.data(), in.frames.data(), 5,
                                     buffer.data(), buffer.data(), buffer.data(), buffer.data()),
                  surge::Error);
#if !defined(SURGE_WITH_CUDNN)
  // A build without cuDNN says so in one line instead of failing later.
  CHECK_THROWS_AS(CnnDeviceConvs(surge::Device::cuda(0), encoder, 6, false, conv_workspace_bytes(encoder, 6)),
                  surge::InputError);
#endif
}

TEST_CASE("cuDNN's planned workspace and the device scratch", "[cnn]") {
  ParamTable table;
  const CnnEncoder nature(table, "encoder", FrameShape{84, 84, 4}, encoder_config("nature"));
  // 84x84x4: the first layer's columns for 32 rows are 32 x 400 x 256 floats (13.1 MB), under the floor.
  CHECK(conv_workspace_bytes(nature, 1) == kMinConvWorkspaceBytes);
  CHECK(conv_workspace_bytes(nature, 65536) == kMinConvWorkspaceBytes);
  // 256x256x12 (RGB, stack 4): 63 x 63 positions x 768 per row; the floor no longer binds, and the
  // workspace stops growing at CnnEncoder::kColumnRows rows.
  ParamTable big_table;
  const CnnEncoder big(big_table, "encoder", FrameShape{256, 256, 12}, encoder_config("nature"));
  const std::size_t per_row = std::size_t{63} * 63 * 768 * sizeof(float);
  CHECK(conv_workspace_bytes(big, 8) == 8 * per_row);
  CHECK(conv_workspace_bytes(big, CnnEncoder::kColumnRows) == CnnEncoder::kColumnRows * per_row);
  CHECK(conv_workspace_bytes(big, 4096) == CnnEncoder::kColumnRows * per_row);
  // Scaled frames, then two buffers of the widest layer (nature's first: 20 x 20 x 32 = 12,800).
  CHECK(device_scratch_size(nature, 10) == 10 * 84 * 84 * 4 + 2 * 10 * 12800);
}

TEST_CASE("pixel minibatch rows are the permutation gather_minibatch follows", "[cnn][shuffle]") {
  const std::int64_t batch = 8 * 37, size = 74, epochs = 3;
  const Permutation family = Permutation::make(batch, 5, 0);
  TrainState state{};
  state.iteration = 4;
  std::vector<std::int64_t> indices(static_cast<std::size_t>(size), -1);
  for (std::int64_t epoch = 0; epoch < epochs; ++epoch)
    for (std::int64_t m = 0; m < batch / size; ++m) {
      pixel_minibatch_indices(surge::Stream(kCpu), family, &state, epochs, epoch, m, size, indices.data());
      const Permutation shuffle = family.with_shuffle(static_cast<std::uint64_t>(state.iteration * epochs + epoch));
      for (std::int64_t j = 0; j < size; ++j) REQUIRE(indices[static_cast<std::size_t>(j)] == shuffle(m * size + j));
    }
}

TEST_CASE("a batch over cuDNN's 32-bit tensor limit is refused with the way out", "[cnn]") {
  ParamTable table;
  const CnnEncoder encoder(table, "encoder", FrameShape{48, 48, 2}, encoder_config("small"));
  // The scaled frames are the widest tensor here: 4608 floats a row.
  CHECK(cudnn_max_rows(encoder) == 2147483647 / 4608);
  CHECK_NOTHROW(check_cudnn_rows(encoder, cudnn_max_rows(encoder)));
  try {
    check_cudnn_rows(encoder, 524288);  // 65536 environments x 32 steps in 4 minibatches
    FAIL("no refusal");
  } catch (const surge::InputError& error) {
    const std::string message = error.what();
    CHECK(message.find("524288 rows") != std::string::npos);
    CHECK(message.find("raise num_minibatches") != std::string::npos);
  }
}

TEST_CASE("cuDNN's algorithm: the first deterministic one that fits, else the first that fits", "[cnn]") {
  using C = ConvAlgorithmCandidate;
  const std::size_t limit = 1000;
  // cuDNN's ranking: a failed one, one over the workspace, a fast non-deterministic one, a deterministic one.
  const std::vector<C> ranked{{false, 0, true}, {true, 5000, true}, {true, 10, false}, {true, 1000, true}};
  CHECK(choose_conv_algorithm(ranked, limit) == 3);
  CHECK(choose_conv_algorithm(ranked, 999) == 2);   // the deterministic one no longer fits
  CHECK(choose_conv_algorithm(ranked, 5000) == 1);  // now the better-ranked deterministic one does
  CHECK(choose_conv_algorithm(ranked, 9) == -1);    // nothing fits
  CHECK(choose_conv_algorithm({}, limit) == -1);
  CHECK(choose_conv_algorithm({{false, 0, true}}, limit) == -1);
}
