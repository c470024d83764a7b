// `surge h5` as a user meets it, on a log of the synthetic rollout (tests/support/synthetic_rollout.hpp):
// info, episodes checked against episodes worked out from the rollout's own formulas, export, and
// bad input answered with one line and exit code 2.
#include <hdf5.h>
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/format.hpp"
#include "tests/support/run_surge.hpp"
#include "tests/support/scratch_folder.hpp"
#include "tests/support/synthetic_rollout.hpp"

namespace fs = std::filesystem;
using namespace surge::testing;

namespace {

// One log shared by the cases: iterations 0..7, every second one logged.
const ScratchFolder& scratch() {
  static ScratchFolder instance("h5_cli");
  static const bool written = [] {
    const Result r = run_program(SURGE_ROLLOUT_LOG_SAMPLE, "'" + instance / "log.h5" + "' 8 2 paced");
    return r.exit_code == 0;
  }();
  REQUIRE(written);
  return instance;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Bad input: exit code 2 and exactly one line on stderr, naming what is wrong.
void check_one_line_error(const Result& r, const std::string& expected) {
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(expected) != std::string::npos);
  CHECK(lines_of(r.err).size() == 1);
  CHECK(r.out.empty());
}

// A copy of the shared log changed through the HDF5 C API by `change` (given the open file).
std::string changed_copy(const std::string& name, const std::function<void(hid_t)>& change) {
  const std::string path = scratch() / name;
  fs::copy_file(scratch() / "log.h5", path, fs::copy_options::overwrite_existing);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(file >= 0);
  change(file);
  REQUIRE(H5Fclose(file) >= 0);
  return path;
}

// Replaces dataset `name` with an empty-valued one of another type or shape.
void replace_dataset(hid_t file, const char* name, hid_t type, const std::vector<hsize_t>& dims) {
  REQUIRE(H5Ldelete(file, name, H5P_DEFAULT) >= 0);
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t dataset = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(dataset >= 0);
  H5Dclose(dataset);
  H5Sclose(space);
}

// Grows dataset `name` by one row that nothing was written to (what a writer that died mid-row leaves).
void grow_by_one_row(hid_t file, const char* name) {
  const hid_t dataset = H5Dopen2(file, name, H5P_DEFAULT);
  REQUIRE(dataset >= 0);
  const hid_t space = H5Dget_space(dataset);
  std::vector<hsize_t> dims(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  dims[0] += 1;
  REQUIRE(H5Dset_extent(dataset, dims.data()) >= 0);
  H5Sclose(space);
  H5Dclose(dataset);
}

// A damaged file is bad input: every command exits with 2 and one line naming the file (no HDF5
// error stack, no crash), or reads it whole where the damage missed what it reads.
void check_damaged(const std::string& path, const std::string& why) {
  for (const std::string& command :
       {"h5 info '" + path + "'", "h5 episodes '" + path + "'", "h5 export '" + path + "' --dataset obs"}) {
    const Result r = run_surge(command);
    INFO(why << ": surge " << command << "\n" << r.err);
    CHECK((r.exit_code == 2 || r.exit_code == 0));
    if (r.exit_code != 2) continue;
    CHECK(lines_of(r.err).size() == 1);
    CHECK(r.err.rfind("surge h5 ", 0) == 0);
    CHECK(r.err.find(path) != std::string::npos);
    CHECK(r.out.empty());
  }
}

}  // namespace

TEST_CASE("surge h5 info shows attributes, datasets and the logged iterations", "[h5_cli]") {
  const Result r = run_surge("h5 info '" + scratch() / "log.h5" + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("schema = surge-rollout-log") != std::string::npos);
  CHECK(r.out.find("scenario = synthetic") != std::string::npos);
  CHECK(r.out.find("    learning_rate = 0.00025") != std::string::npos);  // the configuration, indented
  CHECK(r.out.find("logged iterations: 4 (0, 2, 4, 6); dropped: 0") != std::string::npos);
  CHECK(r.out.find("logged environments: 4 (env 3-6)") != std::string::npos);
  bool obs_line = false;
  for (const std::string& line : lines_of(r.out)) {
    std::istringstream words(line);
    std::string name, type;
    words >> name >> type;
    if (name != "obs") continue;
    obs_line = true;
    CHECK(type == "float32");
    CHECK(line.find("[4, 6, 4, 3]") != std::string::npos);
    CHECK(line.find("shuffle, deflate(1)") != std::string::npos);
  }
  CHECK(obs_line);
}

TEST_CASE("surge h5 episodes lists the episodes the rollout's flags imply", "[h5_cli]") {
  using S = SyntheticRollout;
  // Worked out from the formulas: each logged row starts from its logged accumulators.
  std::vector<std::string> expected = {"env_id,end_iteration,end_step,length,return,terminated,truncated"};
  for (std::int64_t i : {0, 2, 4, 6}) {
    std::vector<float> running_return(S::log_envs);
    std::vector<std::int64_t> running_length(S::log_envs);
    for (std::int64_t m = 0; m < S::log_envs; ++m) {
      running_return[m] = S::start_return(i, S::first_env + m);
      running_length[m] = S::start_length(i, S::first_env + m);
    }
    for (std::int64_t t = 0; t < S::steps; ++t)
      for (std::int64_t m = 0; m < S::log_envs; ++m) {
        const std::int64_t e = S::first_env + m;
        running_return[m] += S::reward(i, t, e);
        running_length[m] += 1;
        if (!S::terminated(i, t, e) && !S::truncated(i, t, e)) continue;
        expected.push_back(std::to_string(e) + "," + std::to_string(i) + "," + std::to_string(t) + "," +
                           std::to_string(running_length[m]) + "," + surge::format_precise(running_return[m]) + "," +
                           std::to_string(S::terminated(i, t, e)) + "," + std::to_string(S::truncated(i, t, e)));
        running_return[m] = 0.0f;
        running_length[m] = 0;
      }
  }
  REQUIRE(expected.size() > 5);
  const Result r = run_surge("h5 episodes '" + scratch() / "log.h5" + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(lines_of(r.out) == expected);

  const std::string csv = scratch() / "episodes.csv";
  REQUIRE(run_surge("h5 episodes '" + scratch() / "log.h5" + "' --out '" + csv + "'").exit_code == 0);
  CHECK(lines_of(read_text(csv)) == expected);
}

TEST_CASE("surge h5 export writes a dataset, or one iteration of it, as CSV", "[h5_cli]") {
  using S = SyntheticRollout;
  const std::string log = "'" + scratch() / "log.h5" + "'";
  Result r = run_surge("h5 export " + log + " --dataset obs --iteration 4 --csv");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(lines.size() == 1 + S::steps * S::log_envs);
  CHECK(lines[0] == "iteration,step,env_id,position,speed,spin");  // the log's obs_names
  for (std::int64_t t = 0; t < S::steps; ++t)
    for (std::int64_t m = 0; m < S::log_envs; ++m) {
      const std::int64_t e = S::first_env + m;
      std::string row = "4," + std::to_string(t) + "," + std::to_string(e);
      for (std::int64_t c = 0; c < S::obs_dim; ++c) {
        row += ',';
        row += surge::format_precise(S::obs(4, t, e, c));
      }
      CHECK(lines[1 + t * S::log_envs + m] == row);
    }

  r = run_surge("h5 export --dataset terminated " + log);  // FILE after the options, all iterations
  REQUIRE(r.exit_code == 0);
  lines = lines_of(r.out);
  REQUIRE(lines.size() == 1 + 4 * S::steps * S::log_envs);
  CHECK(lines[0] == "iteration,step,env_id,terminated");
  CHECK(lines.back() == "6,5,6," + std::to_string(S::terminated(6, 5, 6)));

  r = run_surge("h5 export " + log + " --dataset start_episode_return --iteration 2");
  REQUIRE(r.exit_code == 0);
  CHECK(lines_of(r.out) ==
        std::vector<std::string>{"iteration,env_id,start_episode_return", "2,3,4", "2,4,5", "2,5,6", "2,6,7"});

  r = run_surge("h5 export " + log + " --dataset global_step");
  REQUIRE(r.exit_code == 0);
  CHECK(lines_of(r.out) == std::vector<std::string>{"iteration,global_step", "0,60", "2,180", "4,300", "6,420"});

  r = run_surge("h5 export " + log + " --dataset env_id");
  REQUIRE(r.exit_code == 0);
  CHECK(lines_of(r.out) == std::vector<std::string>{"env_id", "3", "4", "5", "6"});
}

TEST_CASE("surge h5 answers bad input with one line and exit code 2", "[h5_cli]") {
  const ScratchFolder& s = scratch();
  const std::string log = "'" + s / "log.h5" + "'";
  check_one_line_error(run_surge("h5 info '" + s / "missing.h5" + "'"), "no such file");
  std::ofstream(s / "text.h5") << "x,y\n1,2\n";
  check_one_line_error(run_surge("h5 episodes '" + s / "text.h5" + "'"), "is not an HDF5 file");
  const std::string foreign = s / "foreign.h5";
  const hid_t file = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(file >= 0);
  H5Fclose(file);
  check_one_line_error(run_surge("h5 info '" + foreign + "'"), "is an HDF5 file but not a Surge rollout log");
  check_one_line_error(run_surge("h5 export " + log + " --dataset rewards"),
                       "has no dataset 'rewards'; it has env_id, iteration, global_step, obs, actions, reward");
  check_one_line_error(run_surge("h5 export " + log + " --dataset reward --iteration 3"),
                       "surge h5 export: iteration 3 is not in '" + s / "log.h5" +
                           "': the nearest logged iterations are 2 and 4 ('surge h5 info " + s / "log.h5" +
                           "' lists them all)");
  check_one_line_error(run_surge("h5 export " + log + " --dataset reward --iteration 9"),
                       "the last logged iteration is 6");
  check_one_line_error(run_surge("h5 export " + log), "--dataset is required");
  check_one_line_error(run_surge("h5 info"), "give the rollout log to read");
  check_one_line_error(run_surge("h5 summarize " + log), "unknown action 'summarize'");
  check_one_line_error(run_surge("h5 episodes " + log + " --out '" + s / "no/such/folder.csv" + "'"), "does not exist");

  // env_id listing one environment more than the logged fields hold: refused before anything is read.
  const std::string crafted = s / "crafted_env_id.h5";
  fs::copy_file(s / "log.h5", crafted, fs::copy_options::overwrite_existing);
  {
    const hid_t crafted_file = H5Fopen(crafted.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(crafted_file >= 0);
    REQUIRE(H5Ldelete(crafted_file, "env_id", H5P_DEFAULT) >= 0);
    const std::vector<std::int64_t> env_ids = {3, 4, 5, 6, 7};
    const hsize_t count = env_ids.size();
    const hid_t space = H5Screate_simple(1, &count, nullptr);
    const hid_t dataset =
        H5Dcreate2(crafted_file, "env_id", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(dataset >= 0);
    CHECK(H5Dwrite(dataset, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, env_ids.data()) >= 0);
    H5Dclose(dataset);
    H5Sclose(space);
    H5Fclose(crafted_file);
  }
  const std::string shaped = "dataset 'obs' is shaped [4, 6, 4, 3] where [iteration, step, 5, ...] is expected";
  check_one_line_error(run_surge("h5 export '" + crafted + "' --dataset obs"), shaped);
  check_one_line_error(run_surge("h5 export '" + crafted + "' --dataset obs --iteration 2"), shaped);
  check_one_line_error(run_surge("h5 export '" + crafted + "' --dataset start_episode_return"),
                       "dataset 'start_episode_return' is shaped [4, 4] where [iteration, 5, ...] is expected");
  check_one_line_error(run_surge("h5 episodes '" + crafted + "'"), "dataset 'reward' is shaped [4, 6, 4]");

  for (const char* help : {"h5 --help", "h5 info --help", "h5 episodes --help", "h5 export --help"}) {
    const Result r = run_surge(help);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("Usage: surge h5") == 0);
  }
}

TEST_CASE("surge h5 export names columns as the log names its items, else by index", "[h5_cli]") {
  const std::string log = "'" + scratch() / "log.h5" + "'";
  Result r = run_surge("h5 export " + log + " --dataset obs --iteration 2");
  REQUIRE(r.exit_code == 0);
  CHECK(lines_of(r.out).at(0) == "iteration,step,env_id,position,speed,spin");
  // A log without obs_names (written before they were stored), or with names that do not fit.
  const std::string unnamed =
      changed_copy("unnamed.h5", [](hid_t file) { REQUIRE(H5Adelete(file, "obs_names") >= 0); });
  r = run_surge("h5 export '" + unnamed + "' --dataset obs --iteration 2");
  REQUIRE(r.exit_code == 0);
  CHECK(lines_of(r.out).at(0) == "iteration,step,env_id,obs_0,obs_1,obs_2");
  const std::string misnamed = changed_copy("misnamed.h5", [](hid_t file) {
    REQUIRE(H5Adelete(file, "obs_names") >= 0);
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    const hsize_t count = 3;
    const hid_t space = H5Screate_simple(1, &count, nullptr);
    const hid_t attribute = H5Acreate2(file, "obs_names", type, space, H5P_DEFAULT, H5P_DEFAULT);
    const char* names[] = {"a", "a", "step"};  // repeated, and a column the CSV already has
    REQUIRE(H5Awrite(attribute, type, names) >= 0);
    H5Aclose(attribute);
    H5Sclose(space);
    H5Tclose(type);
  });
  r = run_surge("h5 export '" + misnamed + "' --dataset obs --iteration 2");
  REQUIRE(r.exit_code == 0);
  CHECK(lines_of(r.out).at(0) == "iteration,step,env_id,obs_0,obs_1,obs_2");
}

TEST_CASE("surge h5 leaves out a row that a writer which died left partly written, and says so", "[h5_cli]") {
  using S = SyntheticRollout;
  // obs one row longer than the rest: the row being written when the writer died.
  const std::string longer = changed_copy("longer_obs.h5", [](hid_t file) { grow_by_one_row(file, "obs"); });
  Result r = run_surge("h5 info '" + longer + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("logged iterations: 4 (0, 2, 4, 6); dropped: 0; 1 more row partly written") != std::string::npos);
  r = run_surge("h5 export '" + longer + "' --dataset obs");
  REQUIRE(r.exit_code == 0);
  CHECK(lines_of(r.out).size() == 1 + 4 * S::steps * S::log_envs);
  // The index itself one row longer, that row never written (HDF5 reads it as 0).
  const std::string index = changed_copy("longer_index.h5", [](hid_t file) {
    for (const char* name : {"iteration", "global_step", "obs", "actions", "reward", "terminated", "truncated", "value",
                             "start_episode_return", "start_episode_length"})
      grow_by_one_row(file, name);
  });
  r = run_surge("h5 info '" + index + "'");
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("logged iterations: 4 (0, 2, 4, 6); dropped: 0; 1 more row partly written") != std::string::npos);
  r = run_surge("h5 episodes '" + index + "'");
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(lines_of(r.out) == lines_of(run_surge("h5 episodes '" + scratch() / "log.h5" + "'").out));
}

TEST_CASE("surge h5 answers a damaged log with one line naming the file and what is wrong", "[h5_cli]") {
  const ScratchFolder& s = scratch();
  const std::string whole = s / "log.h5";
  const auto size = fs::file_size(whole);

  // Cut in half.
  const std::string cut = s / "cut.h5";
  fs::copy_file(whole, cut, fs::copy_options::overwrite_existing);
  fs::resize_file(cut, size / 2);
  for (const char* command : {"info", "episodes"})
    check_one_line_error(run_surge("h5 " + std::string(command) + " '" + cut + "'"), "'" + cut + "'");
  check_one_line_error(run_surge("h5 info '" + cut + "'"), "surge h5 info: cannot open '" + cut + "'");
  check_damaged(cut, "cut in half");

  // 64 bytes overwritten, at several places in the middle.
  for (const int tenth : {3, 4, 5, 6, 7}) {
    const std::string scribbled = s / ("scribbled" + std::to_string(tenth) + ".h5");
    fs::copy_file(whole, scribbled, fs::copy_options::overwrite_existing);
    std::fstream bytes(scribbled, std::ios::in | std::ios::out | std::ios::binary);
    bytes.seekp(static_cast<std::streamoff>(size * tenth / 10));
    const std::string junk(64, '\xA5');
    bytes.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    bytes.close();
    check_damaged(scribbled, "64 bytes overwritten at " + std::to_string(tenth) + "/10");
  }

  // A dataset missing.
  check_one_line_error(
      run_surge(
          "h5 info '" +
          changed_copy("no_iteration.h5", [](hid_t file) { REQUIRE(H5Ldelete(file, "iteration", H5P_DEFAULT) >= 0); }) +
          "'"),
      "surge h5 info: '" + s / "no_iteration.h5" + "' is a damaged Surge rollout log: it has no 'iteration' dataset");
  check_one_line_error(
      run_surge("h5 episodes '" +
                changed_copy("no_reward.h5", [](hid_t file) { REQUIRE(H5Ldelete(file, "reward", H5P_DEFAULT) >= 0); }) +
                "'"),
      "has no 'reward' dataset, so its episodes cannot be rebuilt");

  // Datasets of the wrong shape or type.
  const std::string flat_reward = changed_copy("flat_reward.h5", [](hid_t file) {
    replace_dataset(file, "reward", H5T_IEEE_F32LE, {4, 24});
  });
  check_one_line_error(run_surge("h5 episodes '" + flat_reward + "'"), "dataset 'reward' is shaped [4, 24]");
  const std::string square_index = changed_copy("square_iteration.h5", [](hid_t file) {
    replace_dataset(file, "iteration", H5T_STD_I64LE, {4, 4});
  });
  check_one_line_error(run_surge("h5 info '" + square_index + "'"), "'" + square_index + "'");
  const std::string scalar_obs = changed_copy("scalar_obs.h5", [](hid_t file) {
    REQUIRE(H5Ldelete(file, "obs", H5P_DEFAULT) >= 0);
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t dataset = H5Dcreate2(file, "obs", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(dataset >= 0);
    H5Dclose(dataset);
    H5Sclose(space);
  });
  check_one_line_error(run_surge("h5 info '" + scalar_obs + "'"), "its dataset 'obs' is a scalar");
  const std::string text_flags = changed_copy("text_terminated.h5", [](hid_t file) {
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, 8);
    replace_dataset(file, "terminated", type, {4, 6, 4});
    H5Tclose(type);
  });
  check_one_line_error(
      run_surge("h5 episodes '" + text_flags + "'"),
      "surge h5 episodes: '" + text_flags + "' is damaged or is not a complete rollout log: read 'terminated'");
  check_one_line_error(run_surge("h5 export '" + text_flags + "' --dataset terminated"), "'" + text_flags + "'");
}

TEST_CASE("The help's export example works on a run with default settings", "[h5_cli]") {
  // The default --log-every (10) on a small run of 45 iterations of 16 x 16 steps.
  ScratchFolder folder("h5_cli_default_run");
  const std::string log = folder / "rollouts.h5";
  const std::string small_run =
      "train --scenario cartpole --device cpu --set hidden=[16,16] --num-envs 16 --num-steps 16";
  const Result trained =
      run_surge(small_run + " --total-steps 11520 --out '" + folder / "run" + "' --log-rollouts '" + log + "'");
  INFO(trained.err);
  REQUIRE(trained.exit_code == 0);
  std::string example;
  for (const std::string& line : lines_of(run_surge("h5 export --help").out))
    if (line.find("--dataset obs --iteration") != std::string::npos) example = line;
  const std::string command = "surge h5 export rollouts.h5 ";
  const auto at = example.find(command);
  REQUIRE(at != std::string::npos);
  const Result r = run_surge("h5 export '" + log + "' " + example.substr(at + command.size()));
  INFO(example << "\n" << r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(lines.size() == 1 + 16 * 16);
  CHECK(lines[0] == "iteration,step,env_id,x,x_dot,theta,theta_dot");
  CHECK(lines[1].rfind("41,0,0,", 0) == 0);
  check_one_line_error(run_surge("h5 export '" + log + "' --dataset obs --iteration 40"),
                       "surge h5 export: iteration 40 is not in '" + log +
                           "': the nearest logged iterations are 31 and 41 ('surge h5 info " + log +
                           "' lists them all)");
  check_one_line_error(run_surge("h5 export '" + log + "' --dataset obs --iteration 0"),
                       "the first logged iteration is 1");
}
