// The HDF5 rollout log on the CPU backend: synthetic rollouts written, then read back with the HDF5
// C API directly (not through our reader) and with our reader; whole iterations dropped and counted
// when the writer falls behind; a failing file stops the log with a message and nothing thrown;
// a resumed log is cut back to the resumed iteration; episodes rebuilt from the flags.
#include <hdf5.h>
#include <sys/wait.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rl/io/hdf5_util.hpp"
#include "rl/io/rollout_episodes.hpp"
#include "rl/io/rollout_file.hpp"
#include "rl/io/rollout_log.hpp"
#include "rl/io/rollout_schema.hpp"
#include "sim/error.hpp"
#include "sim/stream.hpp"
#include "tests/support/run_surge.hpp"
#include "tests/support/scratch_folder.hpp"
#include "tests/support/synthetic_rollout.hpp"

namespace fs = std::filesystem;
using namespace surge;
using namespace surge::rl;
using surge::testing::Result;
using surge::testing::run_program;
using surge::testing::ScratchFolder;
using surge::testing::SyntheticRollout;

namespace {

// ---- direct HDF5 C API reads, independent of rl/rollout_file ----------------------------------

struct Raw {
  std::vector<hsize_t> dims, max_dims, chunk;
  std::vector<double> values;
  bool shuffle = false;
  unsigned deflate_level = 0;
  H5T_class_t type_class = H5T_NO_CLASS;
  std::size_t type_size = 0;
};

Raw read_raw(hid_t file, const char* name) {
  Raw raw;
  const hid_t dataset = H5Dopen2(file, name, H5P_DEFAULT);
  REQUIRE(dataset >= 0);
  const hid_t space = H5Dget_space(dataset);
  const int rank = H5Sget_simple_extent_ndims(space);
  raw.dims.resize(rank);
  raw.max_dims.resize(rank);
  H5Sget_simple_extent_dims(space, raw.dims.data(), raw.max_dims.data());
  const hid_t type = H5Dget_type(dataset);
  raw.type_class = H5Tget_class(type);
  raw.type_size = H5Tget_size(type);
  const hid_t properties = H5Dget_create_plist(dataset);
  if (H5Pget_layout(properties) == H5D_CHUNKED) {
    raw.chunk.resize(rank);
    H5Pget_chunk(properties, rank, raw.chunk.data());
  }
  for (int k = 0; k < H5Pget_nfilters(properties); ++k) {
    unsigned flags = 0, config = 0, values[4] = {};
    std::size_t count = 4;
    const H5Z_filter_t filter = H5Pget_filter2(properties, k, &flags, &count, values, 0, nullptr, &config);
    if (filter == H5Z_FILTER_SHUFFLE) raw.shuffle = true;
    if (filter == H5Z_FILTER_DEFLATE) raw.deflate_level = values[0];
  }
  hsize_t total = 1;
  for (hsize_t d : raw.dims) total *= d;
  raw.values.resize(total);
  if (total > 0) REQUIRE(H5Dread(dataset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.values.data()) >= 0);
  H5Pclose(properties);
  H5Tclose(type);
  H5Sclose(space);
  H5Dclose(dataset);
  return raw;
}

// Opens attribute `name` of `file`, returns what `read` makes of it, and closes it.
template <class Read>
auto read_attribute(hid_t file, const char* name, Read read) {
  const hid_t attribute = H5Aopen(file, name, H5P_DEFAULT);
  REQUIRE(attribute >= 0);
  auto value = read(attribute);
  H5Aclose(attribute);
  return value;
}

std::string read_string_attribute(hid_t file, const char* name) {
  return read_attribute(file, name, [](hid_t attribute) {
    const hid_t type = H5Aget_type(attribute);
    REQUIRE(H5Tis_variable_str(type) > 0);
    char* text = nullptr;
    REQUIRE(H5Aread(attribute, type, &text) >= 0);
    std::string value(text);
    H5free_memory(text);
    H5Tclose(type);
    return value;
  });
}

std::int64_t read_int_attribute(hid_t file, const char* name) {
  return read_attribute(file, name, [](hid_t attribute) {
    std::int64_t value = 0;
    REQUIRE(H5Aread(attribute, H5T_NATIVE_INT64, &value) >= 0);
    return value;
  });
}

// Writes iterations 0 .. iterations-1 of the synthetic rollout, logging every `every`-th.
RolloutLogStats write_synthetic(const std::string& path, std::int64_t iterations, std::int64_t every) {
  SyntheticRollout rollout;
  Stream stream(Device::cpu());
  RolloutLogOptions options = rollout.options(path, every);
  options.queue_depth = 16;  // room for every iteration: these tests check content, not dropping
  RolloutLog log(options, rollout.fields());
  for (std::int64_t i = 0; i < iterations; ++i) rollout.run_iteration(log, i, stream);
  log.close();
  return log.stats();
}

// Checks every logged value of the synthetic rollout in `file` for the given iterations.
void check_synthetic_rows(hid_t file, const std::vector<std::int64_t>& iterations) {
  using S = SyntheticRollout;
  const std::size_t rows = iterations.size();
  const Raw obs = read_raw(file, "obs"), actions = read_raw(file, "actions"), reward = read_raw(file, "reward");
  const Raw terminated = read_raw(file, "terminated"), truncated = read_raw(file, "truncated"),
            value = read_raw(file, "value");
  const Raw start_return = read_raw(file, "start_episode_return"),
            start_length = read_raw(file, "start_episode_length");
  REQUIRE(obs.dims == std::vector<hsize_t>{rows, S::steps, S::log_envs, S::obs_dim});
  REQUIRE(reward.dims == std::vector<hsize_t>{rows, S::steps, S::log_envs});
  REQUIRE(start_return.dims == std::vector<hsize_t>{rows, S::log_envs});
  std::int64_t mismatches = 0;
  for (std::size_t k = 0; k < rows; ++k) {
    const std::int64_t i = iterations[k];
    for (std::int64_t m = 0; m < S::log_envs; ++m) {
      const std::int64_t e = S::first_env + m;
      mismatches += start_return.values[k * S::log_envs + m] != S::start_return(i, e);
      mismatches += start_length.values[k * S::log_envs + m] != S::start_length(i, e);
      for (std::int64_t t = 0; t < S::steps; ++t) {
        const std::size_t cell = (k * S::steps + t) * S::log_envs + m;
        mismatches += actions.values[cell] != S::action(i, t, e);
        mismatches += reward.values[cell] != S::reward(i, t, e);
        mismatches += terminated.values[cell] != S::terminated(i, t, e);
        mismatches += truncated.values[cell] != S::truncated(i, t, e);
        mismatches += value.values[cell] != S::value(i, t, e);
        for (std::int64_t c = 0; c < S::obs_dim; ++c)
          mismatches += obs.values[cell * S::obs_dim + c] != S::obs(i, t, e, c);
      }
    }
  }
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("Logged rollouts read back through the HDF5 C API", "[rollout_log]") {
  using S = SyntheticRollout;
  ScratchFolder scratch("rollout_log_readback");
  const std::string path = scratch / "log.h5";
  const RolloutLogStats stats = write_synthetic(path, 10, 2);
  CHECK(stats.written == 5);
  CHECK(stats.dropped == 0);
  CHECK_FALSE(stats.failed);

  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(file >= 0);
  CHECK(read_string_attribute(file, "schema") == "surge-rollout-log");
  CHECK(read_int_attribute(file, "schema_version") == kRolloutLogSchemaVersion);
  CHECK(read_int_attribute(file, "log_every") == 2);
  CHECK(read_int_attribute(file, "num_envs") == S::num_envs);
  CHECK(read_int_attribute(file, "dropped_iterations") == 0);
  CHECK(read_string_attribute(file, "scenario") == "synthetic");
  CHECK(read_int_attribute(file, "seed") == 42);
  CHECK(read_string_attribute(file, "config") == "[ppo]\nlearning_rate = 0.00025\n");

  const Raw iteration = read_raw(file, "iteration"), global_step = read_raw(file, "global_step"),
            env_id = read_raw(file, "env_id");
  CHECK(iteration.values == std::vector<double>{0, 2, 4, 6, 8});
  CHECK(iteration.max_dims[0] == H5S_UNLIMITED);
  CHECK(global_step.values == std::vector<double>{60, 180, 300, 420, 540});
  CHECK(env_id.values == std::vector<double>{3, 4, 5, 6});
  check_synthetic_rows(file, {0, 2, 4, 6, 8});

  // Chunked, compressed (shuffle + deflate), extendable along the iteration axis; types as declared.
  for (const char* name : {"obs", "actions", "reward", "terminated", "truncated", "value", "start_episode_return"}) {
    INFO(name);
    const Raw raw = read_raw(file, name);
    CHECK(raw.max_dims[0] == H5S_UNLIMITED);
    CHECK_FALSE(raw.chunk.empty());
    CHECK(raw.shuffle);
    CHECK(raw.deflate_level == 1);
  }
  CHECK(read_raw(file, "obs").type_class == H5T_FLOAT);
  CHECK(read_raw(file, "obs").type_size == 4);
  CHECK(read_raw(file, "actions").type_class == H5T_INTEGER);
  CHECK(read_raw(file, "terminated").type_size == 1);
  H5Fclose(file);
}

TEST_CASE("Our reader agrees with the file and describes it", "[rollout_log]") {
  ScratchFolder scratch("rollout_log_reader");
  const std::string path = scratch / "log.h5";
  write_synthetic(path, 5, 1);
  const RolloutFile file(path);
  CHECK(file.iterations() == std::vector<std::int64_t>{0, 1, 2, 3, 4});
  CHECK(file.env_ids() == std::vector<std::int64_t>{3, 4, 5, 6});
  CHECK(file.schema_version() == 1);
  CHECK(file.attribute("scenario") == std::optional<std::string>("synthetic"));
  CHECK(file.attribute("physics_value") == std::optional<std::string>("9.80000019, 0.5"));
  CHECK(file.attribute("physics_names") == std::optional<std::string>("gravity, length"));
  const std::vector<std::string> names = file.dataset_names();
  CHECK(names == std::vector<std::string>{"env_id", "iteration", "global_step", "obs", "actions", "reward",
                                          "terminated", "truncated", "value", "start_episode_return",
                                          "start_episode_length"});
  for (const DatasetInfo& info : file.datasets()) {
    if (info.name != "obs") continue;
    CHECK(info.dtype == "float32");
    CHECK(info.shape == std::vector<std::int64_t>{5, 6, 4, 3});
    CHECK(info.filters == std::vector<std::string>{"shuffle", "deflate(1)"});
    CHECK(info.axes == "[iteration][step][env][3]");
    CHECK(info.description == "observation acted on");
  }
  const DatasetValues row = file.read("reward", file.row_of_iteration(3));
  CHECK(row.shape == std::vector<std::int64_t>{6, 4});
  CHECK(row.values[1 * 4 + 2] == SyntheticRollout::reward(3, 1, 5));
  CHECK_THROWS_WITH(file.row_of_iteration(9),
                    Catch::Contains("iteration 9 is not in") && Catch::Contains("the last logged iteration is 4"));
  CHECK_THROWS_WITH(file.read("rewards"),
                    Catch::Contains("no dataset 'rewards'") && Catch::Contains("reward, terminated"));
  CHECK(describe_ranges({0, 1, 2, 5, 7, 8}) == "0-2, 5, 7-8");
}

TEST_CASE("The reader refuses files that are missing, not HDF5, or not ours", "[rollout_log]") {
  ScratchFolder scratch("rollout_log_refuse");
  CHECK_THROWS_AS(RolloutFile(scratch / "missing.h5"), InputError);
  CHECK_THROWS_WITH(RolloutFile(scratch / "missing.h5"), Catch::Contains("no such file"));
  std::ofstream(scratch / "text.h5") << "not hdf5\n";
  CHECK_THROWS_WITH(RolloutFile(scratch / "text.h5"), Catch::Contains("is not an HDF5 file"));
  const std::string foreign = scratch / "foreign.h5";
  const hid_t file = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(file >= 0);
  H5Fclose(file);
  CHECK_THROWS_AS(RolloutFile(foreign), InputError);
  CHECK_THROWS_WITH(RolloutFile(foreign), Catch::Contains("not a Surge rollout log"));
}

TEST_CASE("A writer that falls behind drops whole iterations and counts them", "[rollout_log]") {
  SyntheticRollout rollout;
  ScratchFolder scratch("rollout_log_overflow");
  const std::string path = scratch / "log.h5";
  RolloutLogOptions options = rollout.options(path, 1);
  options.queue_depth = 2;
  std::mutex mutex;
  std::condition_variable changed;
  bool writer_held = false, release = false;
  options.before_write = [&](std::int64_t) {
    std::unique_lock<std::mutex> lock(mutex);
    writer_held = true;
    changed.notify_all();
    changed.wait(lock, [&] { return release; });
  };
  Stream stream(Device::cpu());
  RolloutLog log(options, rollout.fields());
  rollout.run_iteration(log, 0, stream);
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return writer_held; });  // the writer holds iteration 0's slot
  }
  std::vector<bool> logged;
  for (std::int64_t i = 1; i < 10; ++i) {
    rollout.fill_begin(i);
    logged.push_back(log.begin_iteration(i, stream));
    rollout.scribble_begin_fields();
    rollout.fill_rollout(i);
    log.end_iteration(SyntheticRollout::global_step(i), stream);
  }
  // Iteration 1 takes the second slot; 2..9 find none and are dropped without waiting.
  CHECK(logged == std::vector<bool>{true, false, false, false, false, false, false, false, false});
  CHECK(log.stats().dropped == 8);
  {
    std::lock_guard<std::mutex> lock(mutex);
    release = true;
  }
  changed.notify_all();
  log.close();
  CHECK(log.stats().written == 2);
  CHECK(log.stats().dropped == 8);

  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(file >= 0);
  CHECK(read_int_attribute(file, "dropped_iterations") == 8);
  CHECK(read_raw(file, "iteration").values == std::vector<double>{0, 1});
  check_synthetic_rows(file, {0, 1});  // the rows kept are whole and right
  H5Fclose(file);
}

TEST_CASE("An HDF5 failure stops the log with one message and throws nothing", "[rollout_log]") {
  SyntheticRollout rollout;
  ScratchFolder scratch("rollout_log_failure");
  const std::string path = scratch / "log.h5";
  RolloutLogOptions options = rollout.options(path, 1);
  std::vector<std::string> messages;
  std::mutex mutex;
  options.on_error = [&](const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    messages.push_back(message);
  };
  // Before iteration 3 is written, close every dataset of the file under the writer.
  options.before_write = [&](std::int64_t iteration) {
    if (iteration != 3) return;
    std::lock_guard<std::mutex> lock(hdf5::library_mutex());
    std::vector<hid_t> ids(static_cast<std::size_t>(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_DATASET)));
    H5Fget_obj_ids(H5F_OBJ_ALL, H5F_OBJ_DATASET, ids.size(), ids.data());
    for (hid_t id : ids) H5Dclose(id);
  };
  Stream stream(Device::cpu());
  RolloutLog log(options, rollout.fields());
  for (std::int64_t i = 0; i < 8; ++i) rollout.run_iteration(log, i, stream);  // nothing thrown here
  log.close();
  const RolloutLogStats stats = log.stats();
  CHECK(stats.failed);
  CHECK(stats.written == 3);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0] == stats.error);
  CHECK_THAT(messages[0], Catch::Contains("rollout log '" + path + "' stopped at iteration 3") &&
                              Catch::Contains("training goes on without it"));
  CHECK_FALSE(log.wants(8));
  const RolloutFile file(path);  // what was written before the failure reads back
  CHECK(file.iterations() == std::vector<std::int64_t>{0, 1, 2});
}

namespace {

// Runs rollout_log_sample in a shell whose file-size limit is `limit_kib`, as a stand-in for a
// disk that fills up: past the limit, writes fail with EFBIG.
Result run_sample_with_file_limit(const std::string& log_path, int limit_kib, std::int64_t reserve_bytes) {
  return run_program("bash", "-c 'ulimit -f " + std::to_string(limit_kib) + "; exec \"" + SURGE_ROLLOUT_LOG_SAMPLE +
                                 "\" \"" + log_path + "\" 100000 1 paced " + std::to_string(reserve_bytes) + "'");
}

std::int64_t written_count(const std::string& out) {
  const auto at = out.find("written=");
  return at == std::string::npos ? -1 : std::atoll(out.c_str() + at + 8);
}

}  // namespace

TEST_CASE("Near a full disk the log closes its file whole and training goes on", "[rollout_log]") {
  ScratchFolder scratch("rollout_log_reserve");
  const std::string path = scratch / "log.h5";
  const Result run = run_sample_with_file_limit(path, 60, 12 << 10);
  INFO(run.err);
  CHECK(run.exit_code == 0);  // the program ran to its end
  CHECK_THAT(run.out, Catch::Contains("failed=1"));
  CHECK_THAT(run.err, Catch::Contains("rollout log '" + path + "' stopped at iteration") &&
                          Catch::Contains("kept in reserve); the file is closed, whole"));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);  // one line
  const std::int64_t written = written_count(run.out);
  CHECK(written > 10);
  const RolloutFile file(path);  // readable, with every iteration the log counted
  CHECK(static_cast<std::int64_t>(file.iterations().size()) == written);
  CHECK(file.iterations().back() == written - 1);
}

TEST_CASE("A write that fails for want of space stops the log without taking the process down", "[rollout_log]") {
  ScratchFolder scratch("rollout_log_efbig");
  const std::string path = scratch / "log.h5";
  const Result run = run_sample_with_file_limit(path, 60, 0);  // no reserve: HDF5 itself meets the limit
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK_THAT(run.out, Catch::Contains("failed=1"));
  CHECK_THAT(run.err, Catch::Contains("stopped at iteration") && Catch::Contains("File too large") &&
                          Catch::Contains("training goes on without it"));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
}

TEST_CASE("A resumed log is cut back to the resumed iteration and continues", "[rollout_log]") {
  SyntheticRollout rollout;
  ScratchFolder scratch("rollout_log_resume");
  const std::string path = scratch / "log.h5";
  write_synthetic(path, 10, 1);  // a run that got to iteration 9 after its checkpoint at 6
  Stream stream(Device::cpu());
  {
    RolloutLogOptions options = rollout.options(path, 1);
    options.resume_iteration = 6;
    options.queue_depth = 16;
    RolloutLog log(options, rollout.fields());
    for (std::int64_t i = 6; i < 9; ++i) rollout.run_iteration(log, i, stream);
  }
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(file >= 0);
  CHECK(read_raw(file, "iteration").values == std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8});
  check_synthetic_rows(file, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  H5Fclose(file);

  RolloutLogOptions other = rollout.options(path, 2);  // another --log-every
  other.resume_iteration = 9;
  CHECK_THROWS_WITH(RolloutLog(other, rollout.fields()),
                    Catch::Contains("cannot resume the rollout log") && Catch::Contains("another --log-every"));
}

TEST_CASE("Bad options are refused in one line", "[rollout_log]") {
  SyntheticRollout rollout;
  ScratchFolder scratch("rollout_log_options");
  RolloutLogOptions options = rollout.options(scratch / "log.h5", 1);
  options.log_envs = 20;
  CHECK_THROWS_WITH(RolloutLog(options, rollout.fields()), Catch::Contains("use --log-envs 1..10"));
  options = rollout.options(scratch / "no-such-folder/log.h5", 1);
  CHECK_THROWS_AS(RolloutLog(options, rollout.fields()), InputError);
  CHECK_THROWS_WITH(RolloutLog(options, rollout.fields()), Catch::Contains("cannot create the rollout log"));
}

namespace {

LoggedRollout two_env_rollout(std::vector<std::int64_t> iterations) {
  LoggedRollout r;
  r.steps = 4;
  r.envs = 2;
  r.iterations = std::move(iterations);
  r.env_ids = {5, 6};
  const std::size_t cells = r.iterations.size() * 4 * 2;
  r.reward.assign(cells, 0.0);
  r.terminated.assign(cells, 0.0);
  r.truncated.assign(cells, 0.0);
  for (std::size_t cell = 0; cell < cells; ++cell) r.reward[cell] = cell % 2 == 0 ? 1.0 : 0.5;  // env 5: 1, env 6: 0.5
  return r;
}
std::size_t cell(std::size_t row, std::size_t step, std::size_t env) { return (row * 4 + step) * 2 + env; }

}  // namespace

TEST_CASE("Episodes are rebuilt across consecutive logged iterations", "[rollout_log]") {
  LoggedRollout r = two_env_rollout({0, 1});
  r.terminated[cell(0, 1, 0)] = 1;
  r.terminated[cell(1, 3, 0)] = 1;
  r.truncated[cell(1, 0, 1)] = 1;
  const EpisodeReconstruction got = reconstruct_episodes(r);
  REQUIRE(got.episodes.size() == 3);
  CHECK(got.partial == 0);
  const LoggedEpisode& a = got.episodes[0];  // env 5: steps (0,0) and (0,1)
  CHECK((a.env_id == 5 && a.end_iteration == 0 && a.end_step == 1 && a.length == 2 && a.episode_return == 2.0f &&
         a.terminated && !a.truncated));
  const LoggedEpisode& b = got.episodes[1];  // env 6: (0,0) .. (1,0), truncated
  CHECK((b.env_id == 6 && b.end_iteration == 1 && b.end_step == 0 && b.length == 5 && b.episode_return == 2.5f &&
         b.truncated && !b.terminated));
  const LoggedEpisode& c = got.episodes[2];  // env 5: (0,2) .. (1,3)
  CHECK((c.env_id == 5 && c.end_iteration == 1 && c.end_step == 3 && c.length == 6 && c.episode_return == 6.0f));
}

TEST_CASE("Episodes that began before a gap in the log are counted as partial", "[rollout_log]") {
  LoggedRollout r = two_env_rollout({0, 2});
  r.terminated[cell(0, 1, 0)] = 1;
  r.terminated[cell(1, 3, 0)] = 1;  // began in iteration 1, which was not logged
  r.truncated[cell(1, 0, 1)] = 1;   // likewise
  r.terminated[cell(1, 3, 1)] = 1;  // began after the end at (2, 0): known
  const EpisodeReconstruction got = reconstruct_episodes(r);
  CHECK(got.partial == 2);
  REQUIRE(got.episodes.size() == 2);
  CHECK((got.episodes[0].env_id == 5 && got.episodes[0].end_iteration == 0 && got.episodes[0].length == 2));
  CHECK((got.episodes[1].env_id == 6 && got.episodes[1].end_iteration == 2 && got.episodes[1].end_step == 3 &&
         got.episodes[1].length == 3 && got.episodes[1].episode_return == 1.5f));
}

TEST_CASE("Episodes start from the logged accumulators when the log has them", "[rollout_log]") {
  LoggedRollout r = two_env_rollout({4});
  r.start_return = {10.0, 0.5};
  r.start_length = {20.0, 1.0};
  r.terminated[cell(0, 1, 0)] = 1;
  r.truncated[cell(0, 0, 1)] = 1;
  const EpisodeReconstruction got = reconstruct_episodes(r);
  CHECK(got.partial == 0);
  REQUIRE(got.episodes.size() == 2);
  CHECK((got.episodes[0].env_id == 6 && got.episodes[0].length == 2 && got.episodes[0].episode_return == 1.0f));
  CHECK((got.episodes[1].env_id == 5 && got.episodes[1].length == 22 && got.episodes[1].episode_return == 12.0f));
  r.reward.pop_back();
  CHECK_THROWS_AS(reconstruct_episodes(r), Error);
}
