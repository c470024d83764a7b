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

template <class T>
hid_t memory_type_of() {
  if constexpr (std::is_same_v<T, float>) return H5T_NATIVE_FLOAT;
  if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  if constexpr (std::is_same_v<T, std::int32_t>) return H5T_NATIVE_INT32;
  if constexpr (std::is_same_v<T, std::uint64_t>) return H5T_NATIVE_UINT64;
}

template <class T>
hid_t file_type_of() {
  if constexpr (std::is_same_v<T, float>) return H5T_IEEE_F32LE;
  if constexpr (std::is_same_v<T, double>) return H5T_IEEE_F64LE;
  if constexpr (std::is_same_v<T, std::int32_t>) return H5T_STD_I32LE;
  if constexpr (std::is_same_v<T, std::uint64_t>) return H5T_STD_U64LE;
}

// values laid out [rows][values.size() / rows]; rows == 0 for a one-dimensional dataset.
template <class T>
void write_dataset(hid_t group, const std::string& name, const std::vector<T>& values, hsize_t rows = 0) {
  const hsize_t dims[2] = {rows ? rows : values.size(), rows ? values.size() / rows : 1};
  hdf5::Handle space(H5Screate_simple(rows ? 2 : 1, dims, nullptr), "dataspace of " + name);
  hdf5::Handle dataset(H5Dcreate2(group, name.c_str(), file_type_of<T>(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                       "create " + name);
  if (!values.empty())
    hdf5::check(H5Dwrite(dataset.get(), memory_type_of<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), "write " + name);
}

template <class T>
std::vector<T> read_dataset(hid_t group, const std::string& name, const std::string& path) {
  if (H5Lexists(group, name.c_str(), H5P_DEFAULT) <= 0)
    throw InputError("checkpoint '" + path + "' lacks /resume/" + name + "; it cannot be resumed");
  hdf5::Handle dataset(H5Dopen2(group, name.c_str(), H5P_DEFAULT), "open " + name);
  hdf5::Handle space(H5Dget_space(dataset.get()), "dataspace of " + name);
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  hdf5::check(count, "size of " + name);
  std::vector<T> values(static_cast<std::size_t>(count));
  if (count > 0)
    hdf5::check(H5Dread(dataset.get(), memory_type_of<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), "read " + name);
  return values;
}

bool stored_as_float64(hid_t group, const std::string& name) {
  hdf5::Handle dataset(H5Dopen2(group, name.c_str(), H5P_DEFAULT), "open " + name);
  hdf5::Handle type(H5Dget_type(dataset.get()), "type of " + name);
  return H5Tget_class(type.get()) == H5T_FLOAT && H5Tget_size(type.get()) == 8;
}

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
  s.env_params = params_to_host(engine, stream);
  s.env_params_float64 = engine.spec().param_dtype == DType::Float64;
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
  if (env_params_float64 != (engine.spec().param_dtype == DType::Float64))
    throw InputError(std::string("the checkpoint holds ") + engine.spec().name + "'s physics parameters in " +
                     (env_params_float64 ? "float64" : "float32") + " where this build keeps them in " +
                     dtype_name(engine.spec().param_dtype) + " (it was written by a build from before the change), so "
                     "the run cannot continue exactly; evaluate the agent with 'surge eval' or train afresh");
  params_from_host(engine, env_params, stream);
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
  write_dataset(group.get(), "metrics", metrics, s.metrics_rows.size());
  write_dataset(group.get(), "recent_returns", s.recent_returns);
  write_dataset(group.get(), "running_return", s.running_return);
  write_dataset(group.get(), "env_state", s.env_state);
  if (s.env_params_float64)
    write_dataset(group.get(), "env_params", s.env_params);
  else
    write_dataset(group.get(), "env_params", std::vector<float>(s.env_params.begin(), s.env_params.end()));
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
    hdf5::Handle attribute(H5Aopen(group.get(), "train_state", H5P_DEFAULT), "open train_state");
    std::int64_t t[4] = {};
    hdf5::check(H5Aread(attribute.get(), H5T_NATIVE_INT64, t), "read train_state");
    s.train_state = {t[0], t[1], t[2], t[3]};
  }
  const std::vector<double> o = read_dataset<double>(group.get(), "optimizer", path);
  if (o.size() != 7) throw InputError("checkpoint '" + path + "': /resume/optimizer is not 7 values");
  s.optimizer.learning_rate = o[0];
  s.optimizer.step = o[1];
  s.optimizer.grad_norm_sq = o[2];
  s.optimizer.grad_scale = o[3];
  s.optimizer.step_size = o[4];
  s.optimizer.bias_correction2_sqrt = o[5];
  s.optimizer.frozen = static_cast<std::int32_t>(o[6]);
  s.metrics_columns = hdf5::read_strings_attribute(group.get(), "metrics_columns");
  const std::vector<double> metrics = read_dataset<double>(group.get(), "metrics", path);
  const std::size_t width = s.metrics_columns.size();
  for (std::size_t k = 0; width > 0 && k + width <= metrics.size(); k += width)
    s.metrics_rows.emplace_back(metrics.begin() + static_cast<std::ptrdiff_t>(k), metrics.begin() + static_cast<std::ptrdiff_t>(k + width));
  s.recent_returns = read_dataset<double>(group.get(), "recent_returns", path);
  s.running_return = read_dataset<float>(group.get(), "running_return", path);
  s.env_state = read_dataset<float>(group.get(), "env_state", path);
  s.env_params = read_dataset<double>(group.get(), "env_params", path);  // float32 ones widen exactly
  s.env_params_float64 = stored_as_float64(group.get(), "env_params");
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
