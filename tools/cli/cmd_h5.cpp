// surge h5: reading rollout logs (docs/hdf5-schema.md) from the command line.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "rl/io/rollout_episodes.hpp"
#include "rl/io/rollout_file.hpp"
#include "rl/io/rollout_schema.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"

namespace surge::cli {
namespace {

using rl::DatasetInfo;
using rl::RolloutFile;

// Splits off the FILE argument (the first one that is neither an option nor an option's value).
std::string take_file(const Command& cmd, Args& args, const std::vector<std::string>& value_options) {
  for (std::size_t k = 0; k < args.size(); ++k) {
    const std::string& arg = args[k];
    if (arg == "--help" || arg == "-h") return "";
    if (arg.rfind("--", 0) == 0) {
      const std::string name = arg.substr(2);
      if (name.find('=') == std::string::npos &&
          std::find(value_options.begin(), value_options.end(), name) != value_options.end())
        ++k;  // its value
      continue;
    }
    const std::string file = arg;
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(k));
    return file;
  }
  throw InputError(cmd.complaint("give the rollout log to read, e.g. 'surge h5 info rollouts.h5'"));
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t k = 0; k < shape.size(); ++k) text += (k ? ", " : "") + std::to_string(shape[k]);
  return text + "]";
}

// In as many digits as round-trip the stored value.
std::string format_value(double value, const std::string& dtype) {
  if (dtype.rfind("int", 0) == 0 || dtype.rfind("uint", 0) == 0) return std::to_string(static_cast<long long>(value));
  return dtype == "float64" ? format_number("%.17g", value) : format_precise(value);
}

// What `surge h5 info` shows of dataset `name`; throws InputError listing the datasets there are
// when it has none of that name.
DatasetInfo dataset_info(const RolloutFile& file, const std::string& name) {
  for (DatasetInfo& d : file.datasets())
    if (d.name == name) return std::move(d);
  file.read(name);  // throws, listing them
  throw InputError("'" + file.path() + "' has no dataset '" + name + "'");
}

// A logged field's shape checked against env_id before its values are read: per-step fields are
// [iteration][step][env](item), per-env ones [iteration][env](item), and a damaged or hand-made file
// whose env axis differs from env_id would send the readers below past the values.
void require_env_axis(const RolloutFile& file, const DatasetInfo& field, bool per_step) {
  const std::size_t env_axis = per_step ? 2 : 1;
  const auto envs = static_cast<std::int64_t>(file.env_ids().size());
  if (field.shape.size() <= env_axis || field.shape[env_axis] != envs)
    throw InputError("'" + file.path() + "': dataset '" + field.name + "' is shaped " + shape_text(field.shape) +
                     " where " + (per_step ? "[iteration, step, " : "[iteration, ") + std::to_string(envs) +
                     ", ...] is expected for the " + std::to_string(envs) +
                     " environments in env_id; the file is damaged or was not written by surge train");
}

// CSV column names for the items of dataset `name`: the names the log stores for them (obs_names for
// obs and final_obs, physics_names for physics) where it has them, one per item, and they make
// distinct columns; else name_0, name_1, ... (older logs, other fields).
std::vector<std::string> item_columns(const RolloutFile& file, const std::string& name, std::int64_t items) {
  const char* names_attribute = nullptr;
  if (name == rl::kObsField || name == rl::kFinalObsField) names_attribute = rl::kObsNamesAttribute;
  if (name == rl::kPhysicsField) names_attribute = rl::kPhysicsNamesAttribute;
  if (names_attribute) {
    const auto names = file.string_list_attribute(names_attribute);
    std::vector<std::string> taken = {"iteration", "step", "env_id"};
    bool usable = names && static_cast<std::int64_t>(names->size()) == items;
    for (std::size_t k = 0; usable && k < names->size(); ++k) {
      const std::string& column = (*names)[k];
      usable = !column.empty() && column.find_first_of(",\"\r\n") == std::string::npos &&
               std::find(taken.begin(), taken.end(), column) == taken.end();
      taken.push_back(column);
    }
    if (usable) return *names;
  }
  std::vector<std::string> columns;
  for (std::int64_t c = 0; c < items; ++c) columns.push_back(name + "_" + std::to_string(c));
  return columns;
}

// Output to --out (written whole or not at all) or to stdout.
class Output {
 public:
  explicit Output(const std::string& path) {
    if (!path.empty()) {
      require_writable(path, "output");
      file_ = std::make_unique<AtomicFile>(path);
    }
  }
  std::ostream& stream() { return file_ ? static_cast<std::ostream&>(file_->stream()) : std::cout; }
  void finish() {
    if (file_) file_->commit();
  }

 private:
  std::unique_ptr<AtomicFile> file_;
};

// ---- info ------------------------------------------------------------------------------------

// "2.905% of 3.45 MiB": the space a dataset takes in the file against its values' raw size.
std::string stored_text(const DatasetInfo& d) {
  if (d.raw_bytes <= 0) return "-";
  return format_significant(100.0 * static_cast<double>(d.stored_bytes) / static_cast<double>(d.raw_bytes)) + "% of " +
         format_bytes(static_cast<std::size_t>(d.raw_bytes));
}

int h5_info(Args args) {
  Command cmd("h5 info",
              "Shows a rollout log: its attributes (scenario, seed, physics, configuration, ...), its\n"
              "datasets with their types, shapes, chunks, filters and stored size against their raw\n"
              "size, and the iterations it logged.");
  cmd.note("FILE is a rollout log written by 'surge train --log-rollouts'.").example("surge h5 info rollouts.h5");
  const std::string path = take_file(cmd, args, {});
  if (!cmd.parse(args) || path.empty()) {
    std::cout << cmd.usage();
    return 0;
  }
  const RolloutFile file(path);
  std::ostream& out = std::cout;
  out << "rollout log " << path << " (schema version " << file.schema_version() << ")\n\nattributes:\n";
  for (const auto& [name, value] : file.attributes()) {
    if (value.find('\n') == std::string::npos) {
      out << "  " << name << " = " << value << "\n";
      continue;
    }
    out << "  " << name << " =\n";  // multi-line text (the configuration): indented
    std::istringstream lines(value);
    for (std::string line; std::getline(lines, line);) out << "    " << line << "\n";
  }
  const std::vector<DatasetInfo> datasets = file.datasets();
  std::size_t name_width = 7, shape_width = 5, chunk_width = 5;
  for (const DatasetInfo& d : datasets) {
    name_width = std::max(name_width, d.name.size());
    shape_width = std::max(shape_width, shape_text(d.shape).size());
    chunk_width = std::max(chunk_width, d.chunk.empty() ? 10 : shape_text(d.chunk).size());
  }
  out << "\ndatasets:\n  " << std::left << std::setw(static_cast<int>(name_width)) << "name"
      << "  " << std::setw(8) << "type"
      << "  " << std::setw(static_cast<int>(shape_width)) << "shape"
      << "  " << std::setw(static_cast<int>(chunk_width)) << "chunk"
      << "  " << std::setw(20) << "filters"
      << "  stored\n";
  for (const DatasetInfo& d : datasets) {
    std::string filters;
    for (std::size_t k = 0; k < d.filters.size(); ++k) filters += (k ? ", " : "") + d.filters[k];
    out << "  " << std::setw(static_cast<int>(name_width)) << d.name << "  " << std::setw(8) << d.dtype << "  "
        << std::setw(static_cast<int>(shape_width)) << shape_text(d.shape) << "  "
        << std::setw(static_cast<int>(chunk_width)) << (d.chunk.empty() ? "contiguous" : shape_text(d.chunk)) << "  "
        << std::setw(20) << (filters.empty() ? "none" : filters) << "  " << stored_text(d) << "\n";
  }
  out << std::right;
  const std::vector<std::int64_t>& iterations = file.iterations();
  out << "\nlogged iterations: " << iterations.size() << " (" << rl::describe_ranges(iterations) << ")";
  if (const auto dropped = file.attribute(rl::kDroppedAttribute)) out << "; dropped: " << *dropped;
  if (file.incomplete_rows() > 0)
    out << "; " << plural(file.incomplete_rows(), "more row")
        << " partly written (the writer stopped in the middle of it), left out";
  out << "\nlogged environments: " << file.env_ids().size() << " (env " << rl::describe_ranges(file.env_ids()) << ")\n";
  return 0;
}

// ---- episodes --------------------------------------------------------------------------------

int h5_episodes(Args args) {
  Command cmd("h5 episodes",
              "Rebuilds the episodes of the logged environments from their per-step reward and\n"
              "terminated/truncated flags and writes one CSV row per episode that ended in the log:\n"
              "env_id, end_iteration, end_step, length, return, terminated, truncated.");
  cmd.option("out", "FILE.csv", "write the CSV here (whole or not at all) instead of to stdout")
      .note(
          "FILE is a rollout log written by 'surge train --log-rollouts'. An episode's start is known from the\n"
          "logged start_episode_return/length, or at iteration 0, or after an earlier end in consecutive\n"
          "logged iterations; episodes whose start is unknown are counted on stderr and left out.")
      .example("surge h5 episodes rollouts.h5 --out episodes.csv");
  const std::string path = take_file(cmd, args, {"out"});
  if (!cmd.parse(args) || path.empty()) {
    std::cout << cmd.usage();
    return 0;
  }
  if (cmd.has("out")) require_writable(cmd.get("out"), "output");  // refused before the reads
  const RolloutFile file(path);
  for (const char* name : {rl::kRewardField, rl::kTerminatedField, rl::kTruncatedField})
    if (!file.has_dataset(name))
      throw InputError("'" + path + "' has no '" + name + "' dataset, so its episodes cannot be rebuilt");
  const DatasetInfo reward_info = dataset_info(file, rl::kRewardField);
  require_env_axis(file, reward_info, true);
  for (const char* name : {rl::kTerminatedField, rl::kTruncatedField})
    if (dataset_info(file, name).shape != reward_info.shape)
      throw InputError("'" + path + "': dataset '" + name + "' is not shaped as 'reward' " +
                       shape_text(reward_info.shape) + "; the file is damaged or was not written by surge train");
  const bool has_start =
      file.has_dataset(rl::kStartEpisodeReturnField) && file.has_dataset(rl::kStartEpisodeLengthField);
  if (has_start)
    for (const char* name : {rl::kStartEpisodeReturnField, rl::kStartEpisodeLengthField})
      require_env_axis(file, dataset_info(file, name), false);
  rl::LoggedRollout rollout;
  rollout.iterations = file.iterations();
  if (const auto first = file.attribute(rl::kFirstIterationAttribute)) rollout.first_iteration = std::stoll(*first);
  rollout.env_ids = file.env_ids();
  rl::DatasetValues reward = file.read(rl::kRewardField);
  if (reward.shape.size() != 3) throw InputError("'" + path + "': its 'reward' dataset is not [iteration][step][env]");
  rollout.steps = reward.shape[1];
  rollout.envs = reward.shape[2];
  rollout.reward = std::move(reward.values);
  rollout.terminated = file.read(rl::kTerminatedField).values;
  rollout.truncated = file.read(rl::kTruncatedField).values;
  if (has_start) {
    rollout.start_return = file.read(rl::kStartEpisodeReturnField).values;
    rollout.start_length = file.read(rl::kStartEpisodeLengthField).values;
  }
  const rl::EpisodeReconstruction rebuilt = rl::reconstruct_episodes(rollout);
  // Made after the reads: HDF5 crashing on a damaged file ends the process at once (rl/io/hdf5_read_guard),
  // with no destructor run to remove a temporary file.
  Output output(cmd.has("out") ? cmd.get("out") : "");
  std::ostream& out = output.stream();
  out << "env_id,end_iteration,end_step,length,return,terminated,truncated\n";
  for (const rl::LoggedEpisode& e : rebuilt.episodes)
    out << e.env_id << ',' << e.end_iteration << ',' << e.end_step << ',' << e.length << ','
        << format_value(e.episode_return, "float32") << ',' << int(e.terminated) << ',' << int(e.truncated) << '\n';
  output.finish();
  if (rebuilt.partial > 0)
    std::cerr << "surge h5 episodes: " << rebuilt.episodes.size() << " episodes; " << rebuilt.partial
              << " more ended in the log but began before it, and are left out\n";
  return 0;
}

// ---- export ----------------------------------------------------------------------------------

int h5_export(Args args) {
  Command cmd("h5 export",
              "Writes one dataset of a rollout log as CSV, one row per value (or per item of several values):\n"
              "per-step fields as iteration,step,env_id,<values>; per-env fields as iteration,env_id,<values>.");
  cmd.option("dataset", "NAME", "the dataset to export ('surge h5 info' lists them)", "", true)
      .option("iteration", "I", "only this logged iteration")
      .option("out", "FILE.csv", "write the CSV here (whole or not at all) instead of to stdout")
      .flag("csv", "CSV output (the only format, and the default)")
      .note(
          "FILE is a rollout log written by 'surge train --log-rollouts'. Items of obs and physics are named as the\n"
          "log names them (x, x_dot, ...; gravity, ...). --iteration takes a logged one: by default 1, 11, 21, ...\n"
          "(--log-every 10); 'surge h5 info FILE' lists them.")
      .example("surge h5 export rollouts.h5 --dataset obs --iteration 41 --csv")
      .example("surge h5 export rollouts.h5 --dataset reward --out reward.csv");
  const std::string path = take_file(cmd, args, {"dataset", "iteration", "out"});
  if (!cmd.parse(args) || path.empty()) {
    std::cout << cmd.usage();
    return 0;
  }
  const std::string name = cmd.get("dataset");
  const RolloutFile file(path);
  std::optional<std::int64_t> row;
  if (cmd.has("iteration")) {
    const std::int64_t iteration = cmd.get_int("iteration", 0, INT64_MAX);
    row = file.row_of_iteration(iteration);
  }
  const DatasetInfo info = dataset_info(file, name);
  const std::string& dtype = info.dtype;
  const bool per_step = info.axes.rfind("[iteration][step][env]", 0) == 0;
  // The iteration and global_step indices: one value per logged iteration.
  const bool one_per_iteration = info.shape.size() == 1 || (info.shape.empty() && row);
  if (name != rl::kEnvIdDataset && !one_per_iteration) require_env_axis(file, info, per_step);
  const rl::DatasetValues data = file.read(name, row);

  Output output(cmd.has("out") ? cmd.get("out") : "");  // after the reads: a damaged file leaves nothing
  std::ostream& out = output.stream();
  const std::vector<std::int64_t>& iterations = file.iterations();
  const std::vector<std::int64_t>& env_ids = file.env_ids();
  if (name == rl::kEnvIdDataset) {
    out << "env_id\n";
    for (double v : data.values) out << format_value(v, dtype) << '\n';
  } else if (one_per_iteration) {
    out << (name == rl::kIterationDataset ? "iteration\n" : "iteration," + name + "\n");
    for (std::size_t k = 0; k < data.values.size(); ++k) {
      if (name != rl::kIterationDataset) out << iterations[row ? static_cast<std::size_t>(*row) : k] << ',';
      out << format_value(data.values[k], dtype) << '\n';
    }
  } else {
    // Axes after the iteration: [step][env](item) or [env](item).
    const std::size_t lead = row ? 0 : 1;  // the iteration axis is present unless one row was read
    const std::int64_t steps = per_step ? data.shape[lead] : 1;
    const std::size_t item_axis = lead + (per_step ? 2 : 1);
    std::int64_t items = 1;
    for (std::size_t k = item_axis; k < data.shape.size(); ++k) items *= data.shape[k];
    const std::int64_t rows = row ? 1 : data.shape[0];
    const std::int64_t envs = static_cast<std::int64_t>(env_ids.size());
    out << "iteration," << (per_step ? "step," : "") << "env_id";
    if (items == 1) {
      out << ',' << name;
    } else {
      for (const std::string& column : item_columns(file, name, items)) out << ',' << column;
    }
    out << '\n';
    std::size_t at = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t iteration = iterations[static_cast<std::size_t>(row ? *row : r)];
      for (std::int64_t t = 0; t < steps; ++t)
        for (std::int64_t m = 0; m < envs; ++m) {
          out << iteration << ',';
          if (per_step) out << t << ',';
          out << env_ids[static_cast<std::size_t>(m)];
          for (std::int64_t c = 0; c < items; ++c) out << ',' << format_value(data.values[at++], dtype);
          out << '\n';
        }
    }
  }
  output.finish();
  return 0;
}

}  // namespace

int run_h5(const Args& args) {
  const char* usage =
      "Usage: surge h5 <what> FILE [options]\n\n"
      "Reads a rollout log written by 'surge train --log-rollouts' (schema: docs/hdf5-schema.md).\n\n"
      "  info      datasets, shapes, attributes and logged iterations\n"
      "  episodes  the episodes rebuilt from the logged flags, with return and length, as CSV\n"
      "  export    one dataset as CSV: --dataset NAME [--iteration I]\n\n"
      "See 'surge h5 <what> --help'.\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << usage;
    if (!args.empty()) return 0;
    std::cerr << "surge h5: no subcommand given; they are info, episodes and export\n";
    return 2;
  }
  const Args rest(args.begin() + 1, args.end());
  try {
    if (args[0] == "info") return h5_info(rest);
    if (args[0] == "episodes") return h5_episodes(rest);
    if (args[0] == "export") return h5_export(rest);
  } catch (const InputError& e) {
    // Every complaint starts with the command's name.
    const std::string prefix = "surge h5 " + args[0] + ": ";
    const std::string message = e.what();
    if (message.rfind("surge h5", 0) == 0) throw;
    throw InputError(prefix + message);
  }
  throw InputError("surge h5: unknown action '" + args[0] + "': use info, episodes or export; see 'surge h5 --help'");
}

}  // namespace surge::cli
