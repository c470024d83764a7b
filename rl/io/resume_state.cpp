#include "rl/io/resume_state.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "rl/io/checkpoint.hpp"
#include "rl/io/hdf5_util.hpp"
#include "rl/trainer.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

constexpr const char* kGroup = "resume";
// The environments' saved entries are kept as env_<name> (env_state, env_params, ...).
const std::string kEnginePrefix = "env_";

using hdf5::read_dataset;
using hdf5::write_dataset;

// The agent's part of the trainer's saved state, as the checkpoint keeps it.
std::vector<SavedBuffer> agent_buffers(const Checkpoint& agent) {
  auto of = [](const std::string& name, const auto& values) {
    using T = typename std::decay_t<decltype(values)>::value_type;
    SavedBuffer buffer{name, dtype_of<T>, {static_cast<std::int64_t>(values.size())}, true, {}};
    buffer.bytes.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(buffer.bytes.data(), values.data(), buffer.bytes.size());
    return buffer;
  };
  return {of("params", agent.params), of("adam_m", agent.adam_m), of("adam_v", agent.adam_v),
          of("obs_moments", agent.obs_moments), of("reward_moments", agent.reward_moments)};
}

}  // namespace

ResumeState ResumeState::capture(const Trainer& trainer, Engine& engine) {
  ResumeState s;
  for (SavedBuffer& buffer : trainer.save_state())
    if (!buffer.agent) s.trainer.push_back(std::move(buffer));
  s.engine = save_buffers(engine.buffers(), trainer.stream());
  return s;
}

void ResumeState::restore(const Checkpoint& agent, Trainer& trainer, Engine& engine) const {
  restore_buffers(engine.buffers(), this->engine, "the checkpoint's environment state", trainer.stream());
  std::vector<SavedBuffer> saved = agent_buffers(agent);
  saved.insert(saved.end(), this->trainer.begin(), this->trainer.end());
  trainer.restore_state(saved);  // after the engine's: it observes the restored environments
}

void append_resume_state(const std::string& checkpoint_path, const ResumeState& s) {
  hdf5::Lock lock;
  hdf5::Handle file(H5Fopen(checkpoint_path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "open " + checkpoint_path);
  hdf5::Handle group(H5Gcreate2(file.get(), kGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create /resume");
  for (const SavedBuffer& buffer : s.trainer)
    hdf5::write_values(group.get(), buffer.name, {buffer.dtype, buffer.dims, buffer.bytes});
  for (const SavedBuffer& buffer : s.engine)
    hdf5::write_values(group.get(), kEnginePrefix + buffer.name, {buffer.dtype, buffer.dims, buffer.bytes});
  hdf5::write_strings_attribute(group.get(), "metrics_columns", s.metrics_columns);
  std::vector<double> metrics;
  for (const auto& row : s.metrics_rows) {
    SURGE_CHECK(row.size() == s.metrics_columns.size(), "a metrics row does not match the columns");
    metrics.insert(metrics.end(), row.begin(), row.end());
  }
  write_dataset(group.get(), "metrics", {s.metrics_rows.size(), s.metrics_columns.size()}, metrics.data());
  group.reset();
  hdf5::check(file.close(), "close " + checkpoint_path);
}

ResumeState read_resume_state(const std::string& path) {
  hdf5::Lock lock;
  hdf5::Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open " + path);
  if (H5Lexists(file.get(), kGroup, H5P_DEFAULT) <= 0)
    throw InputError("checkpoint '" + path +
                     "' holds an agent but no /resume state, so training cannot continue from it "
                     "(use it with 'surge eval')");
  hdf5::Handle group(H5Gopen2(file.get(), kGroup, H5P_DEFAULT), "open /resume");
  ResumeState s;
  // Every dataset but the metrics is a saved entry: the environments' under their prefix, the trainer's.
  H5G_info_t info;
  hdf5::check(H5Gget_info(group.get(), &info), "list /resume");
  for (hsize_t k = 0; k < info.nlinks; ++k) {
    char name[256] = {};
    hdf5::check(H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, k, name, sizeof name, H5P_DEFAULT),
                "name of an entry of /resume");
    const std::string entry = name;
    if (entry == "metrics") continue;
    hdf5::Values values = hdf5::read_values(group.get(), entry, path);
    if (entry.rfind(kEnginePrefix, 0) == 0)
      s.engine.push_back(
          {entry.substr(kEnginePrefix.size()), values.dtype, values.dims, false, std::move(values.bytes)});
    else
      s.trainer.push_back({entry, values.dtype, values.dims, false, std::move(values.bytes)});
  }
  if (!find_saved(s.trainer, "train_state")) {
    // The first release kept it as an attribute.
    if (!hdf5::has_attribute(group.get(), "train_state"))
      throw InputError("checkpoint '" + path + "' lacks /resume/train_state; it cannot be resumed");
    const std::vector<std::int64_t> t = hdf5::read_ints_attribute(group.get(), "train_state", path, 4);
    SavedBuffer state{"train_state", DType::Int64, {1, 4}, false, std::vector<std::byte>(sizeof(TrainState))};
    std::memcpy(state.bytes.data(), t.data(), sizeof(TrainState));
    s.trainer.push_back(std::move(state));
  }
  s.metrics_columns = hdf5::read_strings_attribute(group.get(), "metrics_columns");
  const std::size_t width = s.metrics_columns.size();
  const std::vector<double> metrics = read_dataset<double>(group.get(), "metrics", path, {hdf5::kAnyExtent, width});
  for (std::size_t k = 0; width > 0 && k + width <= metrics.size(); k += width)
    s.metrics_rows.emplace_back(metrics.begin() + static_cast<std::ptrdiff_t>(k),
                                metrics.begin() + static_cast<std::ptrdiff_t>(k + width));
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
