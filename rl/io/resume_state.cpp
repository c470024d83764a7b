#include "rl/io/resume_state.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "rl/io/checkpoint.hpp"
#include "rl/io/checkpoint_file.hpp"
#include "rl/io/hdf5_util.hpp"
#include "rl/train_config.hpp"
#include "rl/trainer.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"

namespace surge::rl {
namespace {

constexpr const char* kGroup = "resume";
// The environments' saved entries are kept as env_<name> (env_state, env_params, ...).
const std::string kEnginePrefix = "env_";
// Rank r's part of a data-parallel run's state, r >= 1.
std::string rank_group(int rank) { return "rank" + std::to_string(rank); }
constexpr std::int64_t kMaxRanks = 1 << 20;

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

// A rank's state as bytes, to gather it to rank 0: per entry its name, dtype, dims and values.
void put(std::vector<std::byte>& out, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const std::byte*>(data);
  out.insert(out.end(), bytes, bytes + size);
}

std::vector<std::byte> pack(const RankResume& state) {
  std::vector<std::byte> out;
  for (const std::vector<SavedBuffer>* part : {&state.trainer, &state.engine}) {
    const std::uint64_t count = part->size();
    put(out, &count, sizeof count);
    for (const SavedBuffer& buffer : *part) {
      const std::uint64_t sizes[] = {buffer.name.size(), buffer.dims.size(), buffer.bytes.size()};
      const std::int32_t dtype = static_cast<std::int32_t>(buffer.dtype);
      put(out, sizes, sizeof sizes);
      put(out, &dtype, sizeof dtype);
      put(out, buffer.name.data(), buffer.name.size());
      put(out, buffer.dims.data(), buffer.dims.size() * sizeof(std::int64_t));
      put(out, buffer.bytes.data(), buffer.bytes.size());
    }
  }
  return out;
}

RankResume unpack(const std::vector<std::byte>& in) {
  std::size_t at = 0;
  auto take = [&](void* data, std::size_t size) {
    SURGE_CHECK(size <= in.size() - at, "a rank's gathered state is cut short");
    if (size > 0) std::memcpy(data, in.data() + at, size);
    at += size;
  };
  RankResume state;
  for (std::vector<SavedBuffer>* part : {&state.trainer, &state.engine}) {
    std::uint64_t count = 0;
    take(&count, sizeof count);
    for (std::uint64_t k = 0; k < count; ++k) {
      std::uint64_t sizes[3] = {};
      std::int32_t dtype = 0;
      take(sizes, sizeof sizes);
      take(&dtype, sizeof dtype);
      SURGE_CHECK(sizes[0] <= in.size() && sizes[1] <= 8 && sizes[2] <= in.size(),
                  "a rank's gathered state is damaged");
      SavedBuffer buffer{std::string(sizes[0], ' '), static_cast<DType>(dtype), std::vector<std::int64_t>(sizes[1]),
                         false, std::vector<std::byte>(sizes[2])};
      take(buffer.name.data(), sizes[0]);
      take(buffer.dims.data(), sizes[1] * sizeof(std::int64_t));
      take(buffer.bytes.data(), sizes[2]);
      part->push_back(std::move(buffer));
    }
  }
  SURGE_CHECK(at == in.size(), "a rank's gathered state has bytes left over");
  return state;
}

}  // namespace

ResumeState ResumeState::capture(const Trainer& trainer, Engine& engine) {
  ResumeState s;
  for (SavedBuffer& buffer : trainer.save_state())
    if (!buffer.agent) s.trainer.push_back(std::move(buffer));
  s.engine = save_buffers(engine.buffers(), trainer.stream());
  const Collective& ranks = trainer.ranks();
  s.ranks = ranks.size();
  if (ranks.size() == 1) return s;
  const std::vector<std::vector<std::byte>> all = ranks.gather(pack({s.trainer, s.engine}));
  for (std::size_t r = 1; r < all.size(); ++r) s.other_ranks.push_back(unpack(all[r]));
  return s;
}

void ResumeState::restore(const Checkpoint& agent, Trainer& trainer, Engine& engine) const {
  require_scenario(agent, trainer.spec());
  const int rank = trainer.ranks().rank();
  if (trainer.ranks().size() != ranks || static_cast<int>(other_ranks.size()) != ranks - 1)
    throw InputError("checkpoint '" + agent.path + "' was written by " + plural(ranks, "rank") + ", and this run has " +
                     std::to_string(trainer.ranks().size()) + "; resume it with mpirun -np " + std::to_string(ranks));
  const RankResume own = rank == 0 ? RankResume{this->trainer, this->engine} : other_ranks[rank - 1];
  try {
    restore_buffers(engine.buffers(), own.engine, "its environment state", trainer.stream());
    std::vector<SavedBuffer> saved = agent_buffers(agent);
    saved.insert(saved.end(), own.trainer.begin(), own.trainer.end());
    trainer.restore_state(saved);  // after the engine's: it observes the restored environments
  } catch (const InputError& error) {
    throw InputError("checkpoint '" + agent.path + "': " + error.what());
  }
}

void append_resume_state(const std::string& checkpoint_path, const ResumeState& s) {
  hdf5::Lock lock;
  hdf5::Handle file = checkpoint_file::open_for_append(checkpoint_path);
  hdf5::Handle group(H5Gcreate2(file.get(), kGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create /resume");
  auto write_entries = [](hid_t parent, const std::vector<SavedBuffer>& trainer,
                          const std::vector<SavedBuffer>& engine) {
    for (const std::vector<SavedBuffer>* part : {&trainer, &engine})
      for (const SavedBuffer& buffer : *part)
        checkpoint_file::write(parent, (part == &engine ? kEnginePrefix : std::string()) + buffer.name, buffer.dtype,
                               std::vector<hsize_t>(buffer.dims.begin(), buffer.dims.end()), buffer.bytes.data());
  };
  write_entries(group.get(), s.trainer, s.engine);
  SURGE_CHECK(static_cast<int>(s.other_ranks.size()) == s.ranks - 1, "the resume state lacks a rank's part");
  for (std::size_t r = 0; r < s.other_ranks.size(); ++r) {
    const std::string name = rank_group(static_cast<int>(r) + 1);
    hdf5::Handle rank(H5Gcreate2(group.get(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                      "create /resume/" + name);
    write_entries(rank.get(), s.other_ranks[r].trainer, s.other_ranks[r].engine);
  }
  hdf5::write_strings_attribute(group.get(), "metrics_columns", s.metrics_columns);
  std::vector<double> metrics;
  for (const auto& row : s.metrics_rows) {
    SURGE_CHECK(row.size() == s.metrics_columns.size(), "a metrics row does not match the columns");
    metrics.insert(metrics.end(), row.begin(), row.end());
  }
  checkpoint_file::write(group.get(), "metrics", {s.metrics_rows.size(), s.metrics_columns.size()}, metrics.data());
  group.reset();
  hdf5::check(file.close(), "close " + checkpoint_path);
}

namespace {

// The run's counters, whichever way the file keeps them, checked against the ranges the trainer's
// kernels index with and against the iteration the checkpoint's root claims.
SavedBuffer read_train_state(const checkpoint_file::Reader& file, const std::string& group,
                             const std::vector<SavedBuffer>& entries) {
  std::vector<std::int64_t> values;
  if (const SavedBuffer* found = find_saved(entries, "train_state")) {
    const std::vector<std::int64_t> expected{1, 4};
    if (found->dtype != DType::Int64 || found->dims != expected)
      file.damaged("dataset '" + group + "/train_state' holds " + std::string(dtype_name(found->dtype)) + " " +
                   hdf5::shape_text(std::vector<hsize_t>(found->dims.begin(), found->dims.end())) +
                   " where int64 [1][4] is expected");
    values.resize(4);
    std::memcpy(values.data(), found->bytes.data(), 4 * sizeof(std::int64_t));
  } else if (group == "/resume" && file.has_attribute(group, "train_state")) {  // the first release kept it so
    values = file.integers(group, "train_state", 4);
  } else {
    file.damaged(group + "/train_state is missing");
  }
  const std::int64_t iteration = file.integer("/", "iteration", 0, std::int64_t(1) << 62);
  const char* names[] = {"iteration", "epochs_applied", "last100_head", "last100_count"};
  const std::int64_t high[] = {iteration, std::int64_t(1) << 31, kRecentEpisodes - 1, kRecentEpisodes};
  for (int k = 0; k < 4; ++k)
    if (values[k] < (k == 0 ? iteration : 0) || values[k] > high[k])
      file.damaged(group + "/train_state holds " + std::string(names[k]) + " = " + std::to_string(values[k]) +
                   " where " + std::string(k == 0 ? "the checkpoint's iteration " : "0..") + std::to_string(high[k]) +
                   " is expected");
  SavedBuffer state{"train_state", DType::Int64, {1, 4}, false, std::vector<std::byte>(sizeof(TrainState))};
  std::memcpy(state.bytes.data(), values.data(), sizeof(TrainState));
  return state;
}

// Every saved number is finite, and every signed count (episode steps, the run's counters) >= 0.
template <class T>
void require_values(const checkpoint_file::Reader& file, const std::string& name, const SavedBuffer& entry) {
  const std::size_t count = entry.bytes.size() / sizeof(T);
  for (std::size_t k = 0; k < count; ++k) {
    T value;
    std::memcpy(&value, entry.bytes.data() + k * sizeof(T), sizeof(T));
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(value))
        file.damaged("dataset '" + name + "' holds " + format_precise(static_cast<double>(value)) + " at index " +
                     std::to_string(k) + " where a finite number is expected");
    } else if (value < 0) {
      file.damaged("dataset '" + name + "' holds " + std::to_string(value) + " at index " + std::to_string(k) +
                   " where a count (>= 0) is expected");
    }
  }
}

void require_in_range(const checkpoint_file::Reader& file, const std::string& group, bool engine,
                      const SavedBuffer& entry) {
  const std::string name = group + "/" + (engine ? kEnginePrefix : std::string()) + entry.name;
  switch (entry.dtype) {
    case DType::Float32: require_values<float>(file, name, entry); break;
    case DType::Float64: require_values<double>(file, name, entry); break;
    case DType::Int32: require_values<std::int32_t>(file, name, entry); break;
    case DType::Int64: require_values<std::int64_t>(file, name, entry); break;
    default: break;  // bytes and RNG offsets: every value is one
  }
}

// One rank's entries in `group` (/resume for rank 0, /resume/rank<r>), checked; train_state last.
RankResume read_rank(const checkpoint_file::Reader& file, const std::string& group, std::int64_t num_envs, int ranks) {
  RankResume s;
  // Every dataset but the metrics is a saved entry: the environments' under their prefix, the trainer's.
  for (const std::string& entry : file.members(group)) {
    if (group == "/resume" && entry == "metrics") continue;
    if (group == "/resume" && ranks > 1 && entry.rfind("rank", 0) == 0) continue;  // read on their own
    hdf5::Values values = file.read_values(group + "/" + entry);
    if (entry.rfind(kEnginePrefix, 0) == 0)
      s.engine.push_back(
          {entry.substr(kEnginePrefix.size()), values.dtype, values.dims, false, std::move(values.bytes)});
    else
      s.trainer.push_back({entry, values.dtype, values.dims, false, std::move(values.bytes)});
  }
  for (const std::vector<SavedBuffer>* entries : {&s.trainer, &s.engine})
    for (const SavedBuffer& entry : *entries)
      if (entry.name != "train_state") require_in_range(file, group, entries == &s.engine, entry);  // checked below
  // Each environment's entry holds the same number of values per environment (led by the environment;
  // the first release kept them flat): checked here, before the run builds anything.
  for (const SavedBuffer& entry : s.engine) {
    const std::int64_t values = static_cast<std::int64_t>(entry.bytes.size() / dtype_size(entry.dtype));
    if (values == 0 || values % num_envs != 0)
      file.damaged("dataset '" + group + "/" + kEnginePrefix + entry.name + "' is shaped " +
                   hdf5::shape_text(std::vector<hsize_t>(entry.dims.begin(), entry.dims.end())) +
                   ", not the same number of values for each of its config's num_envs = " + std::to_string(num_envs) +
                   " environments");
  }
  SavedBuffer state = read_train_state(file, group, s.trainer);
  s.trainer.erase(
      std::remove_if(s.trainer.begin(), s.trainer.end(), [](const SavedBuffer& b) { return b.name == "train_state"; }),
      s.trainer.end());
  s.trainer.push_back(std::move(state));
  return s;
}

ResumeState read_resume_file(const checkpoint_file::Reader& file) {
  if (!file.has_object("/resume"))
    throw InputError("checkpoint '" + file.path() +
                     "' holds an agent but no /resume state, so training cannot continue from it "
                     "(use it with 'surge eval')");
  ResumeState s;
  s.path = file.path();
  // Files written before data parallelism have no `ranks`: one process wrote them.
  s.ranks = file.has_attribute("/", "ranks") ? static_cast<int>(file.integer("/", "ranks", 1, kMaxRanks)) : 1;
  const std::int64_t num_envs = load_train_config(file.text("/", "config"), "config", false, "").num_envs;
  RankResume first = read_rank(file, "/resume", num_envs, s.ranks);
  s.trainer = std::move(first.trainer);
  s.engine = std::move(first.engine);
  for (int r = 1; r < s.ranks; ++r) {
    const std::string group = "/resume/" + rank_group(r);
    if (!file.has_object(group))
      file.damaged(group + " is missing (the root's attribute ranks = " + std::to_string(s.ranks) + ")");
    s.other_ranks.push_back(read_rank(file, group, num_envs, s.ranks));
  }
  const std::int64_t iteration = saved_value<TrainState>(s.trainer, "train_state")->iteration;
  s.metrics_columns = file.texts("/resume", "metrics_columns");
  const std::size_t width = s.metrics_columns.size();
  if (width == 0 || width > 1000)
    file.damaged("attribute 'metrics_columns' of /resume holds " + std::to_string(width) +
                 " names where 1 to 1000 are expected");
  // One row per iteration done, as metrics.csv has.
  std::vector<std::byte> bytes;
  file.read("/resume/metrics", DType::Float64, {{static_cast<hsize_t>(iteration), width}}, bytes);
  const double* metrics = reinterpret_cast<const double*>(bytes.data());
  for (std::size_t k = 0; k < static_cast<std::size_t>(iteration); ++k)
    s.metrics_rows.emplace_back(metrics + k * width, metrics + (k + 1) * width);
  return s;
}

}  // namespace

ResumeState read_resume_state(const std::string& path) {
  hdf5::Lock lock;
  const checkpoint_file::Reader file(path);
  return checkpoint_file::guarded(path, [&] { return read_resume_file(file); });
}

void write_resumable_checkpoint(const std::string& path, const Checkpoint& agent, const ResumeState& state) {
  const std::string temporary = path + ".resumable." + std::to_string(::getpid());
  try {
    write_checkpoint(temporary, agent);
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

void write_resumable_checkpoint(const std::string& path, const Trainer& trainer, const ResumeState& state) {
  write_resumable_checkpoint(path, checkpoint_of(trainer), state);
}

std::vector<SavedBuffer> ResumeState::trainer_state(const Checkpoint& agent) const {
  std::vector<SavedBuffer> saved = agent_buffers(agent);
  saved.insert(saved.end(), trainer.begin(), trainer.end());
  return saved;
}

}  // namespace surge::rl
