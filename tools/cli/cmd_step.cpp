// surge step: one batched transition of states given in a CSV file.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "rl/io/rollout_log.hpp"
#include "scenarios/registry.hpp"
#include "scenarios/scene_render.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "sim/memory.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/physics_option.hpp"
#include "tools/video/png.hpp"

namespace surge::cli {

namespace {

// Deflate level of `--frames FILE.h5`: CartPole's 84x84 grey frames in chunks of 4 come to 3.4% of
// their raw size at level 1, 3.0% at 4 and 2.8% at 6, at 1.5x and 2.5x the time (docs/pixels.md).
constexpr int kFramesDeflateLevel = 1;

// A parameter in as many digits as read back to the value the scenario held.
std::string format_param(double value, const ScenarioSpec& spec) {
  return spec.param_dtype == DType::Float64 ? format_shortest(value) : format_precise(value);
}

// Where pixel observations go: a folder of PNG files, one per row, or one HDF5 file (a path ending in
// .h5 or .hdf5), or nothing for vector observations.
struct FrameOutput {
  std::string folder;
  FrameSize size;
  bool hdf5 = false;
};

bool names_hdf5_file(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  return extension == ".h5" || extension == ".hdf5";
}

FrameOutput frame_output(const Command& cmd) {
  const std::string observation = cmd.get("observation");
  if (observation != "vector" && observation != "pixels")
    throw InputError("--observation '" + format_excerpt(observation) + "' is not known; use vector or pixels");
  const bool pixels = observation == "pixels";
  if (!pixels) {
    for (const char* option : {"frames", "frame-size"})
      if (cmd.has(option))
        throw InputError(std::string("--") + option + " draws pixel observations; add --observation pixels");
    if (cmd.flag_set("grayscale")) throw InputError("--grayscale draws pixel observations; add --observation pixels");
    return {};
  }
  if (!cmd.has("frames")) throw InputError("--observation pixels writes frames; give --frames DIR for them");
  const int side = cmd.has("frame-size") ? static_cast<int>(cmd.get_int("frame-size", 8, 512)) : 84;
  const std::string folder = cmd.get("frames");
  if (folder.empty()) throw InputError("--frames is empty; give a folder for the frames, or FILE.h5");
  const FrameSize size{side, side, cmd.flag_set("grayscale") ? 1 : 3};
  if (!names_hdf5_file(folder)) return {folder, size};
  const std::filesystem::path parent = std::filesystem::path(folder).parent_path();
  std::error_code error;
  if (!parent.empty() && !std::filesystem::is_directory(parent, error))
    throw InputError("--frames '" + format_excerpt(folder) + "': its folder does not exist; create it or give another");
  if (std::filesystem::is_directory(folder, error))
    throw InputError("--frames '" + format_excerpt(folder) + "' is a folder; give a file name for the HDF5 frames");
  return {folder, size, true};
}

// The frames' folder, created if missing; before anything is written.
void make_frame_folder(const FrameOutput& out) {
  std::error_code error;
  std::filesystem::create_directories(out.folder, error);
  if (error || !std::filesystem::is_directory(out.folder))
    throw InputError("--frames '" + format_excerpt(out.folder) + "' is not a folder that can be created; give another");
}

// Frame k of `frames` ([n][H][W][C]) as DIR/row_<k+1>.png, numbered as the input's rows.
void write_frames(const FrameOutput& out, const std::vector<std::uint8_t>& frames, std::int64_t n) {
  for (std::int64_t row = 0; row < n; ++row) {
    const std::vector<std::uint8_t> png =
        video::encode_png(frames.data() + row * out.size.bytes(), out.size.width, out.size.height, out.size.channels);
    char name[32];
    std::snprintf(name, sizeof name, "row_%06lld.png", static_cast<long long>(row + 1));
    write_atomically((std::filesystem::path(out.folder) / name).string(), std::string(png.begin(), png.end()));
  }
}

// Every frame ([n][H][W][C]) into one HDF5 file: a one-iteration rollout log (docs/hdf5-schema.md) whose
// per-env field `frames` [1][n][H][W][C] holds row k + 1's frame at env k, chunked kFramesPerChunk frames
// at a time and deflated. Written beside the path and renamed into place: the whole file or nothing.
void write_frames_hdf5(const FrameOutput& out, const ScenarioSpec& spec, const std::vector<std::uint8_t>& frames,
                       std::int64_t n) {
  const std::string partial = out.folder + ".partial";
  rl::RolloutLogOptions options;
  options.path = partial;
  options.num_envs = options.log_envs = n;
  options.deflate_level = kFramesDeflateLevel;
  options.attributes = {{"scenario", spec.name},
                        {"observation", std::string("pixels")},
                        {"frame_shape", std::vector<std::int64_t>{out.size.height, out.size.width, out.size.channels}},
                        {"rows", std::string("env k is the input's row k + 1, drawn after its step")}};
  std::string failure;
  options.on_error = [&](const std::string& message) { failure = message; };
  rl::LogField field;
  field.name = "frames";
  field.dtype = rl::LogDtype::UInt8;
  field.item_shape = {out.size.height, out.size.width, out.size.channels};
  field.data = frames.data();
  field.chunk_envs = rl::kFramesPerChunk;
  field.description = "each input row's next state drawn, rows top to bottom, uint8";
  {
    rl::RolloutLog log(options, {field});
    const Stream stream(Device::cpu());
    log.begin_iteration(0, stream);
    log.end_iteration(n, stream);
    log.close();
    if (log.stats().written != 1 && failure.empty()) failure = "the frames were not written";
  }
  std::error_code error;
  if (failure.empty()) std::filesystem::rename(partial, out.folder, error);
  if (!failure.empty() || error) {
    std::filesystem::remove(partial, error);
    throw InputError("--frames '" + format_excerpt(out.folder) +
                     "': " + (failure.empty() ? "cannot rename into place" : failure) + "; give another path");
  }
}

// Reads the input, steps every row once and writes the output.
int step_rows(const Command& cmd) {
  const ScenarioSpec& spec = scenario_spec(cmd.get("scenario"));
  const PhysicsConfig physics = resolve_physics(spec, physics_options(cmd));
  const std::string output_path = cmd.get("output");
  require_writable(output_path, "output");
  if (cmd.get("observation") == "pixels") reference_frame_size(spec.name);  // a scenario without a renderer stops here
  const FrameOutput frames = frame_output(cmd);
  const Device device = resolve_device(cmd.get("device"));
  const CsvTable table = CsvTable::read(cmd.get("input"));
  if (table.rows.empty()) throw InputError("'" + table.path + "' has a header but no rows to step");

  // Locate the columns we need.
  std::vector<int> state_columns;
  std::string needed;
  for (const std::string& name : spec.state_names) needed += "s_" + name + ", ";
  std::vector<std::string> action_names;
  if (spec.action_kind == ActionKind::Discrete || spec.action_dim == 1) {
    action_names.push_back("action");
  } else {
    for (int k = 0; k < spec.action_dim; ++k) action_names.push_back("action_" + std::to_string(k));
  }
  for (std::size_t k = 0; k < action_names.size(); ++k) needed += (k ? ", " : "") + action_names[k];
  for (const std::string& name : spec.state_names) {
    const int c = table.column("s_" + name);
    if (c < 0)
      throw InputError("'" + table.path + "' has no column 's_" + name + "': " + spec.name + " needs " + needed);
    state_columns.push_back(c);
  }
  std::vector<int> action_columns;
  for (const std::string& name : action_names) {
    const int c = table.column(name);
    if (c < 0) throw InputError("'" + table.path + "' has no column '" + name + "': " + spec.name + " needs " + needed);
    action_columns.push_back(c);
  }

  const std::int64_t n = static_cast<std::int64_t>(table.rows.size());
  const int state_dim = spec.state_dim;
  std::vector<float> states(static_cast<std::size_t>(n * state_dim));
  std::vector<std::int32_t> discrete;
  std::vector<float> continuous;
  for (std::int64_t row = 0; row < n; ++row) {
    for (int k = 0; k < state_dim; ++k)
      states[row * state_dim + k] = static_cast<float>(parse_cell(table, row, state_columns[k]));
    if (spec.action_kind == ActionKind::Discrete) {
      const double a = parse_cell(table, row, action_columns[0]);
      if (a != std::floor(a) || a < 0 || a >= spec.num_actions)
        throw InputError("'" + table.path + "' row " + std::to_string(row + 1) + ", column 'action': '" +
                         format_excerpt(table.rows[row][action_columns[0]]) + "' is not a valid " + spec.name +
                         " action (an integer 0.." + std::to_string(spec.num_actions - 1) + ")");
      discrete.push_back(static_cast<std::int32_t>(a));
    } else {
      for (int column : action_columns) continuous.push_back(static_cast<float>(parse_cell(table, row, column)));
    }
  }

  Stream stream(device);
  auto engine = make_engine(spec.name, device, n, 0, physics);
  DeviceBuffer<float> states_device(device, n * state_dim), next_states(device, n * state_dim);
  DeviceBuffer<float> obs(device, n * spec.obs_dim), reward(device, n);
  DeviceBuffer<std::uint8_t> terminated(device, n);
  DeviceBuffer<std::int32_t> discrete_device(device, spec.action_kind == ActionKind::Discrete ? n : 0);
  DeviceBuffer<float> continuous_device(device, spec.action_kind == ActionKind::Continuous ? n * spec.action_dim : 0);
  const StreamDrain drain(stream);  // the buffers above outlive the work enqueued on them
  from_host(states_device.span(), states, stream);
  if (!discrete.empty()) from_host(discrete_device.span(), discrete, stream);
  if (!continuous.empty()) from_host(continuous_device.span(), continuous, stream);
  engine->transition(states_device.cspan(), ActionView{discrete_device.cspan(), continuous_device.cspan()},
                     next_states.span(), obs.span(), reward.span(), terminated.span(), stream);
  const auto next_host = to_host(next_states.cspan(), stream);
  const auto obs_host = to_host(obs.cspan(), stream);
  const auto reward_host = to_host(reward.cspan(), stream);
  const auto terminated_host = to_host(terminated.cspan(), stream);
  const std::vector<double> params_host = params_to_host(*engine, stream);  // [N][param_count]
  std::vector<int> randomized;
  for (int j = 0; j < spec.param_count(); ++j)
    if (physics.randomized[j]) randomized.push_back(j);

  AtomicFile file(output_path);
  auto& out = file.stream();
  for (const std::string& name : spec.state_names) out << "next_" << name << ",";
  for (int k = 0; k < spec.obs_dim; ++k) out << "obs_" << k << ",";
  out << "reward,terminated";
  for (int j : randomized) out << ",param_" << spec.params[j].name;
  out << "\n";
  for (std::int64_t row = 0; row < n; ++row) {
    for (int k = 0; k < state_dim; ++k) out << format_precise(next_host[row * state_dim + k]) << ",";
    for (int k = 0; k < spec.obs_dim; ++k) out << format_precise(obs_host[row * spec.obs_dim + k]) << ",";
    out << format_precise(reward_host[row]) << "," << int(terminated_host[row]);
    for (int j : randomized) out << "," << format_param(params_host[row * spec.param_count() + j], spec);
    out << "\n";
  }
  std::vector<std::uint8_t> pictures;
  if (!frames.folder.empty()) {
    if (!frames.hdf5) make_frame_folder(frames);
    pictures.resize(static_cast<std::size_t>(n * frames.size.bytes()));
    render_states(spec.name, next_host.data(), params_host.data(), n, frames.size, pictures.data());
  }
  if (frames.hdf5) write_frames_hdf5(frames, spec, pictures, n);  // before the output: a failure leaves neither
  file.commit();
  if (!frames.folder.empty() && !frames.hdf5) write_frames(frames, pictures, n);
  std::cerr << "surge step: " << plural(n, spec.name + " transition") << " on " << device.str() << " -> "
            << output_path;
  if (!frames.folder.empty())
    std::cerr << ", " << plural(n, "frame") << " of " << frames.size.width << "x" << frames.size.height << " "
              << (frames.size.channels == 1 ? "grey" : "RGB") << " -> " << frames.folder
              << (frames.hdf5 ? " (dataset frames)" : "/row_NNNNNN.png");
  std::cerr << "\n";
  return 0;
}

}  // namespace

int run_step(const Args& args) {
  Command cmd("step",
              "Loads each input row into its own environment, steps them all once together, and writes\n"
              "one output row per input row, in input order.");
  cmd.option("scenario", "NAME", "scenario to step", "", true)
      .option("input", "IN.csv", "states and actions: columns s_<state> and action (others are ignored)", "", true)
      .option("output", "OUT.csv", "written with next_<state>, obs_<i>, reward, terminated", "", true)
      .option("device", "DEV", device_help(), "auto")
      .option("observation", "KIND", "vector, or pixels: also draw each row's next state as a frame", "vector")
      .option("frames", "DIR|FILE.h5",
              "with --observation pixels: the folder for row_000001.png, ... (created if missing), or one HDF5 "
              "file (a name ending in .h5) with a compressed uint8 dataset 'frames' [1][rows][S][S][channels]")
      .option("frame-size", "S", "with --observation pixels: frames of S x S pixels (8 to 512; default 84)")
      .flag("grayscale", "with --observation pixels: grey frames (else RGB)");
  add_physics_option(cmd)
      .note(
          "Continuous scenarios with several action dimensions read action_0, action_1, ...\n"
          "Each row's environment draws its own value of a randomised parameter; the output then has a\n"
          "param_<name> column per randomised parameter with the value the row ran under.\n"
          "The output is written whole or not at all.")
      .example("surge step --scenario cartpole --input ../shared/golden/gymnasium/cartpole.csv --output next.csv")
      .example("surge step --scenario pendulum --input in.csv --output next.csv --physics mass=1.2,gravity=9:11")
      .example(
          "surge step --scenario cartpole --input in.csv --output next.csv --observation pixels --frames frames "
          "--grayscale")
      .example(
          "surge step --scenario cartpole --input in.csv --output next.csv --observation pixels --frames frames.h5 "
          "--grayscale");
  return cmd.parse_or_print_usage(args) ? cmd.naming_errors([&] { return step_rows(cmd); }) : 0;
}

}  // namespace surge::cli
