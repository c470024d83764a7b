#include "rl/io/resume_state.hpp"

#include <unistd.h>

#include <cstdio>

#include "rl/io/checkpoint.hpp"
#include "rl/io/hdf5_util.hpp"
#include "rl/trainer.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

constexpr const char* kGroup = "resume";

using hdf5::read_dataset;
using hdf5::write_dataset;

template <class T>
void upload(Span<T> device, const std::vector<T>& host, const std::string& what, const Stream& stream) {
  if (static_cast<std::int64_t>(host.size()) != device.size)
    throw InputError("the checkpoint's " + what + " holds " + std::to_string(host.size()) + " values where this run has " +
                     std::to_string(device.size) + "; resume with the checkpoint's own config");
  from_host(device, host, stream);
}

}  // namespace

ResumeState ResumeState::capture(const Trainer& trainer, Engine& engine) {
  const Stream& stream = trainer.stream();
  ResumeState s;
  s.train_state = trainer.train_state();
  s.optimizer = trainer.optimizer_scalars();
  s.recent_returns = to_host(trainer.recent_returns(), stream);
  s.running_return = to_host(trainer.running_returns(), stream);
  s.env_state = to_host(engine.states(), stream);
  s.env_params = to_host(engine.params(), stream);
  s.env_episode_steps = to_host(engine.episode_steps(), stream);
  s.env_episode_returns = to_host(engine.episode_returns(), stream);
  s.env_rng_offsets = to_host(engine.rng_offsets(), stream);
  s.reward_accumulator = to_host(trainer.reward_accumulator(), stream);
  return s;
}

void ResumeState::restore(const Checkpoint& agent, Trainer& trainer, Engine& engine) const {
  const Stream& stream = trainer.stream();
  trainer.restore(agent.params, agent.adam_m, agent.adam_v, optimizer, train_state);
  upload(trainer.recent_returns(), recent_returns, "ring of recent returns", stream);
  upload(trainer.running_returns(), running_return, "running episode returns", stream);
  upload(engine.states(), env_state, "environment state", stream);
  upload(engine.params(), env_params, "environment parameters", stream);
  upload(engine.episode_steps(), env_episode_steps, "episode step counters", stream);
  upload(engine.episode_returns(), env_episode_returns, "episode returns", stream);
  upload(engine.rng_offsets(), env_rng_offsets, "environment RNG offsets", stream);
  trainer.restore_normalization(agent.obs_moments, agent.reward_moments, reward_accumulator);
  trainer.observe_engine();  // the restored environments' observation starts the next iteration
  stream.synchronize();
}

void append_resume_state(const std::string& checkpoint_path, const ResumeState& s) {
  hdf5::Lock lock;
  hdf5::Handle file(H5Fopen(checkpoint_path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "open " + checkpoint_path);
  hdf5::Handle group(H5Gcreate2(file.get(), kGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create /resume");
  const TrainState& t = s.train_state;
  hdf5::write_ints_attribute(group.get(), "train_state", {t.iteration, t.epochs_applied, t.last100_head, t.last100_count});
  const OptimizerScalars& o = s.optimizer;
  write_dataset(group.get(), "optimizer",
                std::vector<double>{o.learning_rate, o.step, o.grad_norm_sq, o.grad_scale, o.step_size,
                                    o.bias_correction2_sqrt, static_cast<double>(o.frozen)});
  hdf5::write_strings_attribute(group.get(), "metrics_columns", s.metrics_columns);
  std::vector<double> metrics;
  for (const auto& row : s.metrics_rows) {
    SURGE_CHECK(row.size() == s.metrics_columns.size(), "a metrics row does not match the columns");
    metrics.insert(metrics.end(), row.begin(), row.end());
  }
  write_dataset(group.get(), "metrics", {s.metrics_rows.size(), s.metrics_columns.size()}, metrics.data());
  write_dataset(group.get(), "recent_returns", s.recent_returns);
  write_dataset(group.get(), "running_return", s.running_return);
  write_dataset(group.get(), "env_state", s.env_state);
  write_dataset(group.get(), "env_params", s.env_params);
  write_dataset(group.get(), "env_episode_steps", s.env_episode_steps);
  write_dataset(group.get(), "env_episode_returns", s.env_episode_returns);
  write_dataset(group.get(), "env_rng_offsets", s.env_rng_offsets);
  if (!s.reward_accumulator.empty()) write_dataset(group.get(), "reward_accumulator", s.reward_accumulator);
  group.reset();
  hdf5::check(file.close(), "close " + checkpoint_path);
}

ResumeState read_resume_state(const std::string& path) {
  hdf5::Lock lock;
  hdf5::Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open " + path);
  if (H5Lexists(file.get(), kGroup, H5P_DEFAULT) <= 0)
    throw InputError("checkpoint '" + path + "' holds an agent but no /resume state, so training cannot continue from it "
                     "(use it with 'surge eval')");
  hdf5::Handle group(H5Gopen2(file.get(), kGroup, H5P_DEFAULT), "open /resume");
  ResumeState s;
  {
    const std::vector<std::int64_t> t = hdf5::read_ints_attribute(group.get(), "train_state", path, 4);
    s.train_state = {t[0], t[1], t[2], t[3]};
  }
  const std::vector<double> o = read_dataset<double>(group.get(), "optimizer", path, {7});
  s.optimizer.learning_rate = o[0];
  s.optimizer.step = o[1];
  s.optimizer.grad_norm_sq = o[2];
  s.optimizer.grad_scale = o[3];
  s.optimizer.step_size = o[4];
  s.optimizer.bias_correction2_sqrt = o[5];
  s.optimizer.frozen = static_cast<std::int32_t>(o[6]);
  s.metrics_columns = hdf5::read_strings_attribute(group.get(), "metrics_columns");
  const std::size_t width = s.metrics_columns.size();
  const std::vector<double> metrics = read_dataset<double>(group.get(), "metrics", path, {hdf5::kAnyExtent, width});
  for (std::size_t k = 0; width > 0 && k + width <= metrics.size(); k += width)
    s.metrics_rows.emplace_back(metrics.begin() + static_cast<std::ptrdiff_t>(k), metrics.begin() + static_cast<std::ptrdiff_t>(k + width));
  s.recent_returns = read_dataset<double>(group.get(), "recent_returns", path);
  s.running_return = read_dataset<float>(group.get(), "running_return", path);
  s.env_state = read_dataset<float>(group.get(), "env_state", path);
  s.env_params = read_dataset<float>(group.get(), "env_params", path);
  s.env_episode_steps = read_dataset<std::int32_t>(group.get(), "env_episode_steps", path);
  s.env_episode_returns = read_dataset<float>(group.get(), "env_episode_returns", path);
  s.env_rng_offsets = read_dataset<std::uint64_t>(group.get(), "env_rng_offsets", path);
  if (H5Lexists(group.get(), "reward_accumulator", H5P_DEFAULT) > 0)
    s.reward_accumulator = read_dataset<float>(group.get(), "reward_accumulator", path);
  return s;
}

void write_resumable_checkpoint(const std::string& path, const Trainer& trainer, const ResumeState& state) {
  const std::string temporary = path + ".resumable." + std::to_string(::getpid());
  try {
    write_checkpoint(temporary, trainer);
    append_resume_state(temporary, state);
  } catch (...) {
    std::remove(temporary.c_str());
    throw;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw Error("could not move the checkpoint into place at '" + path + "'");
  }
}

}  // namespace surge::rl
