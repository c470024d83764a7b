// The CNN encoder (rl/cnn_encoder.hpp): the gradient of the whole PPO loss through a shared trunk and
// linear actor and critic heads against central finite differences in double precision; the memory plan;
// the named configurations; save and restore of its parameters through their named tensor views.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "rl/cnn_encoder.hpp"
#include "rl/device_util.hpp"
#include "rl/gemm.hpp"
#include "rl/ppo_loss.hpp"
#include "sim/error.hpp"
#include "tests/support/finite_difference.hpp"
#include "tests/support/ppo_gradient_batch.hpp"

using namespace surge::rl;
namespace testing = surge::testing;

namespace {

// A pixel policy as the trainer will build one: encoder trunk, then a linear actor head (logits) and a
// linear critic head (value) on the same features.
struct PixelPolicy {
  ParamTable table;
  CnnEncoder encoder;
  int num_actions;
  std::int64_t actor_weight, actor_bias, critic_weight, critic_bias;

  PixelPolicy(FrameShape frame, const EncoderConfig& config, int actions)
      : encoder(table, "encoder", frame, config), num_actions(actions) {
    const int features = encoder.feature_dim();
    actor_weight = table[table.add("actor.weight", actions, features)].offset;
    actor_bias = table[table.add("actor.bias", actions, 1)].offset;
    critic_weight = table[table.add("critic.weight", 1, features)].offset;
    critic_bias = table[table.add("critic.bias", 1, 1)].offset;
  }
};

struct Minibatch {
  std::vector<std::uint8_t> frames;
  std::vector<std::int32_t> actions;
  std::vector<double> old_logprob, old_value, advantage, returns;
};

// The loss and (when grads is not null) its gradient: forward through trunk and heads, ppo_loss, then
// back through the heads into d_features and through the trunk.
double loss_and_gradient(const PixelPolicy& policy, const PpoLossConfig& config, const Minibatch& data,
                         std::int64_t rows, const std::vector<double>& params, std::vector<double>* grads,
                         std::vector<double>* logits_out = nullptr) {
  const surge::Device cpu = surge::Device::cpu();
  surge::Stream stream(cpu);
  const CnnEncoder& encoder = policy.encoder;
  const int features_dim = encoder.feature_dim(), actions = policy.num_actions;
  std::vector<double> activations(static_cast<std::size_t>(encoder.activation_size(rows)));
  std::vector<double> scratch(static_cast<std::size_t>(encoder.scratch_size(rows)));
  std::vector<double> features(static_cast<std::size_t>(rows * features_dim));
  cnn_forward(stream, encoder, params.data(), data.frames.data(), rows, activations.data(), scratch.data(),
              features.data());

  std::vector<double> logits(static_cast<std::size_t>(rows * actions)), values(static_cast<std::size_t>(rows));
  gemm<double>(stream, Transpose::No, Transpose::Yes, rows, actions, features_dim, 1.0, features.data(), features_dim,
               params.data() + policy.actor_weight, features_dim, 0.0, logits.data(), actions,
               params.data() + policy.actor_bias);
  gemm<double>(stream, Transpose::No, Transpose::Yes, rows, 1, features_dim, 1.0, features.data(), features_dim,
               params.data() + policy.critic_weight, features_dim, 0.0, values.data(), 1,
               params.data() + policy.critic_bias);
  if (logits_out) {
    *logits_out = logits;
    logits_out->insert(logits_out->end(), values.begin(), values.end());
    return 0.0;
  }

  std::vector<double> obs_unused(1);
  MinibatchView<double> minibatch;
  minibatch.size = rows;
  minibatch.obs = obs_unused.data();
  minibatch.actions = data.actions.data();
  minibatch.old_logprob = data.old_logprob.data();
  minibatch.old_value = data.old_value.data();
  minibatch.advantage = data.advantage.data();
  minibatch.returns = data.returns.data();
  std::vector<double> reduce(static_cast<std::size_t>(reduce_scratch_doubles(cpu, kLossTermCount) + 64));
  std::vector<double> stats(2), terms(kLossTermCount), d_logits(logits.size()), d_values(values.size());
  ppo_loss(stream, config, minibatch, actions, logits.data(), values.data(), stats.data(), reduce.data(),
           d_logits.data(), d_values.data(), terms.data());
  const double loss = total_loss(config, terms.data(), rows);
  if (!grads) return loss;

  // Heads: their weight and bias gradients, and d_features = d_logits Wa + d_values wc.
  gemm<double>(stream, Transpose::Yes, Transpose::No, actions, features_dim, rows, 1.0, d_logits.data(), actions,
               features.data(), features_dim, 0.0, grads->data() + policy.actor_weight, features_dim);
  gemm<double>(stream, Transpose::Yes, Transpose::No, 1, features_dim, rows, 1.0, d_values.data(), 1, features.data(),
               features_dim, 0.0, grads->data() + policy.critic_weight, features_dim);
  for (int a = 0; a < actions; ++a) {
    double sum = 0;
    for (std::int64_t r = 0; r < rows; ++r) sum += d_logits[static_cast<std::size_t>(r * actions + a)];
    (*grads)[static_cast<std::size_t>(policy.actor_bias + a)] = sum;
  }
  double value_bias = 0;
  for (double d : d_values) value_bias += d;
  (*grads)[static_cast<std::size_t>(policy.critic_bias)] = value_bias;
  std::vector<double> d_features(features.size());
  gemm<double>(stream, Transpose::No, Transpose::No, rows, features_dim, actions, 1.0, d_logits.data(), actions,
               params.data() + policy.actor_weight, features_dim, 0.0, d_features.data(), features_dim);
  gemm<double>(stream, Transpose::No, Transpose::No, rows, features_dim, 1, 1.0, d_values.data(), 1,
               params.data() + policy.critic_weight, features_dim, 1.0, d_features.data(), features_dim);
  cnn_backward(stream, encoder, params.data(), data.frames.data(), rows, activations.data(), features.data(),
               d_features.data(), grads->data(), scratch.data());
  return loss;
}

// Checks every parameter when `per_slice` is 0, else that many spread through each slice.
void check_gradient(FrameShape frame, const EncoderConfig& config, std::int64_t rows, int per_slice,
                    std::uint64_t seed) {
  const int num_actions = 3;
  const PixelPolicy policy(frame, config, num_actions);
  const ParamTable& table = policy.table;
  surge::Rng rng(seed, 7, 0);
  std::vector<double> params(static_cast<std::size_t>(table.total()), 0.0);
  surge::Rng init_rng(seed, 8, 0);
  policy.encoder.initialize(params, init_rng);
  // Heads and biases random too, so that no gradient is zero by construction.
  for (const auto& slice : table.slices())
    for (std::int64_t j = 0; j < slice.size(); ++j)
      params[static_cast<std::size_t>(slice.offset + j)] += 0.1 * testing::normal(rng);

  Minibatch data;
  data.frames.resize(static_cast<std::size_t>(rows * policy.encoder.frame_size()));
  for (auto& p : data.frames) p = static_cast<std::uint8_t>(rng.next_u32() & 255u);
  std::vector<double> outputs;
  loss_and_gradient(policy, PpoLossConfig{}, data, rows, params, nullptr, &outputs);
  for (std::int64_t i = 0; i < rows; ++i) {
    const double* row = outputs.data() + i * num_actions;
    const auto action = static_cast<std::int32_t>(rng.next_u32() % num_actions);
    double max = row[0], partition = 0;
    for (int a = 1; a < num_actions; ++a) max = std::max(max, row[a]);
    for (int a = 0; a < num_actions; ++a) partition += std::exp(row[a] - max);
    const auto estimates = testing::around_the_clip_range(i, row[action] - max - std::log(partition),
                                                          outputs[static_cast<std::size_t>(rows * num_actions + i)]);
    data.actions.push_back(action);
    data.old_logprob.push_back(estimates.old_logprob);
    data.old_value.push_back(estimates.old_value);
    data.returns.push_back(estimates.returns);
    data.advantage.push_back(testing::normal(rng) + 0.3);
  }

  PpoLossConfig loss_config;
  loss_config.ent_coef = 0.05;
  std::vector<double> grads(params.size(), 0.0);
  loss_and_gradient(policy, loss_config, data, rows, params, &grads);
  auto loss_at = [&](const std::vector<double>& p) {
    return loss_and_gradient(policy, loss_config, data, rows, p, nullptr);
  };

  // h small enough that a ReLU input rarely changes sign within +-h, large enough that the loss's
  // rounding (1e-16 of it) stays far below the gradient's size after dividing by 2h.
  const double h = 1e-7;
  for (const auto& slice : table.slices()) {
    const std::int64_t count = per_slice == 0 ? slice.size() : std::min<std::int64_t>(per_slice, slice.size());
    int nonzero = 0;
    for (std::int64_t i = 0; i < count; ++i) {
      const std::int64_t j = per_slice == 0 ? i : (i * 7919) % slice.size();
      const std::int64_t index = slice.offset + j;
      const double numeric = testing::central_difference(loss_at, params, index, h);
      const double analytic = grads[static_cast<std::size_t>(index)];
      INFO(slice.name << "[" << j << "]: analytic " << analytic << ", finite difference " << numeric);
      CHECK(std::abs(analytic - numeric) <= 1e-6 + 1e-5 * std::abs(numeric));
      if (std::abs(analytic) > 1e-6) ++nonzero;
    }
    INFO(slice.name << ": " << nonzero << " of " << count << " checked gradients are non-zero");
    CHECK(nonzero * 2 > count);  // a gradient of zeros would pass vacuously
  }
}

}  // namespace

TEST_CASE("PPO loss gradient through a small CNN trunk matches finite differences", "[cnn][gradient]") {
  const EncoderConfig config{"custom", {{4, 4, 2}, {3, 3, 1}}, 6};
  check_gradient(FrameShape{12, 12, 2}, config, 6, 0, 1);
}

TEST_CASE("PPO loss gradient through the nature encoder matches finite differences", "[cnn][gradient]") {
  check_gradient(FrameShape{36, 36, 4}, encoder_config("nature"), 4, 24, 2);
}

TEST_CASE("encoder configurations and memory plan", "[cnn]") {
  ParamTable table;
  const CnnEncoder nature(table, "encoder", FrameShape{84, 84, 4}, encoder_config("nature"));
  CHECK(nature.conv(0).output_size() == 20 * 20 * 32);
  CHECK(nature.conv(1).output_size() == 9 * 9 * 64);
  CHECK(nature.flat_dim() == 7 * 7 * 64);
  CHECK(nature.feature_dim() == 512);
  // CleanRL's Atari trunk has 1,684,128 parameters (nn.Conv2d and nn.Linear weights and biases).
  CHECK(table.parameter_count() == 32 * 4 * 64 + 32 + 64 * 32 * 16 + 64 + 64 * 64 * 9 + 64 + 512 * 3136 + 512);
  CHECK(table.parameter_count() == 1684128);
  // Activations: the three conv outputs per row; scratch: im2col for 32 rows of the largest layer (or
  // the float frames, where oneDNN convolves) plus two buffers of the widest output.
  CHECK(nature.activation_size(256) == 256 * (12800 + 5184 + 3136));
#if defined(SURGE_WITH_ONEDNN)
  const std::int64_t columns = 256 * 84 * 84 * 4;  // more than im2col's: the frames as floats, for oneDNN
#else
  const std::int64_t columns = 32 * 400 * 256;
#endif
  CHECK(nature.column_capacity(256) == columns);
  CHECK(nature.scratch_size(256) == columns + 2 * 256 * 12800);
  CHECK(nature.workspace_bytes(256, 4) == 4 * (nature.activation_size(256) + nature.scratch_size(256)));

  ParamTable small_table;
  const CnnEncoder small(small_table, "encoder", FrameShape{64, 64, 4}, encoder_config("small"));
  CHECK(small.flat_dim() == 4 * 4 * 32);
  CHECK(small.feature_dim() == 256);
  CHECK(small.forward_flops_per_row() * 3.5 < nature.forward_flops_per_row());

  ParamTable other;
  CHECK_THROWS_AS(encoder_config("resnet"), surge::InputError);
  CHECK_THROWS_AS(CnnEncoder(other, "encoder", FrameShape{32, 32, 4}, encoder_config("nature")), surge::InputError);
}

TEST_CASE("encoder initialisation is orthogonal with gain sqrt(2) and zero biases", "[cnn]") {
  ParamTable table;
  const CnnEncoder encoder(table, "encoder", FrameShape{36, 36, 4}, encoder_config("small"));
  std::vector<double> params(static_cast<std::size_t>(table.total()), 1.0);
  surge::Rng rng(5, 3, 0);
  encoder.initialize(params, rng);
  for (int l = 0; l < encoder.num_convs(); ++l) {
    const ConvShape& s = encoder.conv(l);
    const double* w = params.data() + encoder.conv_weight_offset(l);
    // Rows (out channels) fewer than columns: W W^T = 2 I.
    for (int a = 0; a < s.out_channels; ++a)
      for (int b = 0; b < s.out_channels; ++b) {
        double dot = 0;
        for (std::int64_t k = 0; k < s.patch_size(); ++k) dot += w[a * s.patch_size() + k] * w[b * s.patch_size() + k];
        CHECK(dot == Approx(a == b ? 2.0 : 0.0).margin(1e-9));
      }
    for (int o = 0; o < s.out_channels; ++o)
      CHECK(params[static_cast<std::size_t>(encoder.conv_bias_offset(l) + o)] == 0.0);
  }
}

TEST_CASE("encoder parameters save and restore through their named views", "[cnn]") {
  // What a checkpoint does with every slice: write each named [rows][cols] view out, read it back into a
  // fresh table of the same encoder, and get the same features.
  ParamTable table;
  const CnnEncoder encoder(table, "encoder", FrameShape{36, 36, 2}, encoder_config("small"));
  std::vector<float> params(static_cast<std::size_t>(table.total()), 0.0f);
  std::vector<double> initial(params.size(), 0.0);
  surge::Rng rng(9, 1, 0);
  encoder.initialize(initial, rng);
  for (std::size_t i = 0; i < params.size(); ++i) params[i] = static_cast<float>(initial[i] + 0.01 * (i % 7));

  std::vector<std::pair<std::string, std::vector<float>>> saved;
  for (const auto& view : table.tensor_views(surge::Span<float>{params.data(), table.total()})) {
    const auto* data = static_cast<const float*>(view.view.data);
    saved.emplace_back(view.name, std::vector<float>(data, data + view.view.numel()));
  }
  CHECK(saved.size() == 8u);

  ParamTable restored_table;
  const CnnEncoder restored(restored_table, "encoder", FrameShape{36, 36, 2}, encoder_config("small"));
  std::vector<float> restored_params(static_cast<std::size_t>(restored_table.total()), -1.0f);
  for (const auto& [name, values] : saved) {
    const int index = restored_table.find(name);
    REQUIRE(index >= 0);
    REQUIRE(restored_table[index].size() == static_cast<std::int64_t>(values.size()));
    std::copy(values.begin(), values.end(), restored_params.begin() + restored_table[index].offset);
  }

  const std::int64_t rows = 3;
  std::vector<std::uint8_t> frames(static_cast<std::size_t>(rows * encoder.frame_size()));
  for (auto& p : frames) p = static_cast<std::uint8_t>(rng.next_u32() & 255u);
  auto features_of = [&](const std::vector<float>& p) {
    surge::Stream stream(surge::Device::cpu());
    std::vector<float> activations(static_cast<std::size_t>(encoder.activation_size(rows)));
    std::vector<float> scratch(static_cast<std::size_t>(encoder.scratch_size(rows)));
    std::vector<float> features(static_cast<std::size_t>(rows * encoder.feature_dim()));
    cnn_forward(stream, encoder, p.data(), frames.data(), rows, activations.data(), scratch.data(), features.data());
    return features;
  };
  const std::vector<float> before = features_of(params), after = features_of(restored_params);
  CHECK(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)) == 0);
  int positive = 0;
  for (float f : before) positive += f > 0;
  CHECK(positive > 0);
}

#if defined(SURGE_WITH_ONEDNN)
TEST_CASE("the encoder's oneDNN passes match its im2col passes", "[cnn]") {
  // Both run in float and round their sums in different orders: features and gradients agree to
  // 1e-4 (1 + |im2col|), far below any indexing error (the gradient test covers the im2col side).
  ParamTable table;
  const CnnEncoder encoder(table, "encoder", FrameShape{44, 44, 4}, encoder_config("nature"));
  const std::int64_t rows = 5;
  std::vector<double> initial(static_cast<std::size_t>(table.total()), 0.0);
  surge::Rng rng(12, 0, 0);
  encoder.initialize(initial, rng);
  const std::vector<float> params(initial.begin(), initial.end());
  std::vector<std::uint8_t> frames(static_cast<std::size_t>(rows * encoder.frame_size()));
  for (auto& p : frames) p = static_cast<std::uint8_t>(rng.next_u32() & 255u);
  std::vector<float> d_features(static_cast<std::size_t>(rows * encoder.feature_dim()));
  for (auto& d : d_features) d = rng.uniform(-1.0f, 1.0f);

  const CnnCpuConvs convs(encoder, rows);
  auto run = [&](const CnnCpuConvs* through) {
    surge::Stream stream(surge::Device::cpu());
    std::vector<float> activations(static_cast<std::size_t>(encoder.activation_size(rows)));
    std::vector<float> scratch(static_cast<std::size_t>(encoder.scratch_size(rows)));
    std::vector<float> features(d_features.size()), grads(params.size(), 0.0f);
    cnn_forward(stream, encoder, params.data(), frames.data(), rows, activations.data(), scratch.data(),
                features.data(), through);
    cnn_backward(stream, encoder, params.data(), frames.data(), rows, activations.data(), features.data(),
                 d_features.data(), grads.data(), scratch.data(), through);
    features.insert(features.end(), grads.begin(), grads.end());
    return features;
  };
  const std::vector<float> im2col = run(nullptr), onednn = run(&convs);
  REQUIRE(im2col.size() == onednn.size());
  int nonzero = 0;
  for (std::size_t i = 0; i < im2col.size(); ++i) {
    INFO("element " << i << " of features then gradients");
    REQUIRE(std::abs(onednn[i] - im2col[i]) <= 1e-4f * (1.0f + std::abs(im2col[i])));
    nonzero += im2col[i] != 0.0f;
  }
  CHECK(nonzero * 4 > static_cast<int>(im2col.size()));
  CHECK_THROWS_AS(
      cnn_forward(surge::Stream(surge::Device::cpu()), encoder, params.data(), frames.data(), rows - 1,
                  static_cast<float*>(nullptr), static_cast<float*>(nullptr), static_cast<float*>(nullptr), &convs),
      surge::Error);
}
#endif
