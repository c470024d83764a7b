// The `surge` program as a user meets it: help and version, exit codes, one-line errors that name
// the bad value, outputs written whole or not at all, `surge step` on the golden data, and the
// JSON of `surge bench env`.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/device.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/run_surge.hpp"
#include "tests/support/scratch_folder.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/io.hpp"

namespace fs = std::filesystem;

namespace {

using surge::testing::line_count;
using surge::testing::read_text;
using surge::testing::Result;
using surge::testing::run_surge;
using surge::testing::ScratchFolder;

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string quoted(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// One line, ending in a newline, with something on it.
bool is_one_line(const std::string& text) { return line_count(text) == 1 && text.size() > 1 && text.back() == '\n'; }

bool any_partial_file(const fs::path& folder) {
  for (const auto& entry : fs::recursive_directory_iterator(folder))
    if (entry.path().filename().string().find(".partial.") != std::string::npos) return true;
  return false;
}

// `surge step` on an input file holding `csv`: exit code 2, one line on stderr naming each of `named`,
// nothing on stdout, and neither the output nor a partial one left behind.
void check_step_refuses(const std::string& scenario, const std::string& csv, const std::vector<std::string>& named) {
  ScratchFolder scratch("cli");
  const fs::path input = scratch / "in.csv", output = scratch / "out.csv";
  write_text(input, csv);
  const Result r = run_surge("step --scenario " + scenario + " --device cpu --input " + quoted(input.string()) +
                             " --output " + quoted(output.string()));
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(is_one_line(r.err));
  for (const std::string& word : named) CHECK(r.err.find(word) != std::string::npos);
  CHECK_FALSE(fs::exists(output));
  CHECK_FALSE(any_partial_file(scratch.path()));
  CHECK(r.out.empty());
}

const char* kHeader = "s_x,s_x_dot,s_theta,s_theta_dot,action\n";
const char* kGoodRow = "0.01,0.02,0.03,0.04,1\n";

}  // namespace

TEST_CASE("help and version exit 0 and print to stdout", "[cli]") {
  for (const char* arguments :
       {"--help", "-h", "help", "step --help", "bench --help", "bench env --help", "bench env -h"}) {
    INFO("surge " << arguments);
    const Result r = run_surge(arguments);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("Usage: surge") != std::string::npos);
    CHECK(r.err.empty());
  }
  const Result version = run_surge("--version");
  CHECK(version.exit_code == 0);
  CHECK(version.out.rfind("surge ", 0) == 0);
  CHECK(version.out.find("CUDA backend") != std::string::npos);
  // The top-level help lists the commands and the scenarios.
  const Result help = run_surge("--help");
  CHECK(help.out.find("step") != std::string::npos);
  CHECK(help.out.find("bench env") != std::string::npos);
  CHECK(help.out.find("cartpole") != std::string::npos);
}

TEST_CASE("unknown commands and options exit 2 with one line", "[cli]") {
  struct Case {
    const char* arguments;
    const char* named;  // what the line must mention
  };
  const Case cases[] = {
      {"frobnicate", "frobnicate"},
      {"step --frobnicate 1", "--frobnicate"},
      {"bench env --frobnicate", "--frobnicate"},
      {"bench frobnicate", "frobnicate"},
      {"bench env --num-envs many --device cpu", "many"},
      {"bench env --num-envs 0 --device cpu", "--num-envs"},
      {"bench env --device tpu", "tpu"},
      {"step --scenario nosuch --input in.csv --output out.csv", "nosuch"},
      {"step --scenario cartpole --input in.csv", "--output"},
  };
  for (const Case& c : cases) {
    const Result r = run_surge(c.arguments);
    INFO("surge " << c.arguments << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(is_one_line(r.err));
    CHECK(r.err.find(c.named) != std::string::npos);
  }
  // A bad order-free test mode in the environment: refused before anything is written.
  const std::string out =
      (std::filesystem::temp_directory_path() / ("surge_test_cli_order_" + std::to_string(::getpid()))).string();
  const Result order = surge::testing::run_program(
      "env", "SURGE_CPU_ORDER=sideways '" + std::string(SURGE_BINARY) + "' train --device cpu --out '" + out + "'");
  INFO("stderr: " << order.err);
  CHECK(order.exit_code == 2);
  CHECK(is_one_line(order.err));
  CHECK(order.err.find("sideways") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
  // No arguments at all: usage, and the exit code of a usage error.
  const Result bare = run_surge("");
  CHECK(bare.exit_code == 2);
  CHECK(bare.out.find("Usage: surge") != std::string::npos);
}

TEST_CASE("surge step rejects bad input with one line, exit 2 and no output", "[cli][step]") {
  struct Case {
    const char* name;
    std::string csv;                 // the input file's text
    std::vector<std::string> named;  // what the error line must mention
  };
  const std::string h = kHeader, g = kGoodRow;
  const Case cases[] = {
      {"a missing column", "s_x,s_x_dot,s_theta_dot,action\n0.01,0.02,0.04,1\n", {"s_theta"}},
      {"a missing action column", "s_x,s_x_dot,s_theta,s_theta_dot\n0.01,0.02,0.03,0.04\n", {"action"}},
      {"a cell that is not a number", h + g + "0.01,abc,0.03,0.04,0\n", {"row 2", "s_x_dot", "abc"}},
      {"an empty cell", h + g + g + "0.01,0.02,,0.04,0\n", {"row 3", "s_theta"}},
      {"a cell that is not finite", h + "nan,0.02,0.03,0.04,0\n", {"row 1", "s_x", "nan"}},
      {"action 2", h + g + g + "0.01,0.02,0.03,0.04,2\n", {"row 3", "action", "2"}},
      {"action -1", h + g + "0.01,0.02,0.03,0.04,-1\n", {"row 2", "action", "-1"}},
      {"action 0.5", h + "0.01,0.02,0.03,0.04,0.5\n", {"row 1", "action", "0.5"}},
      {"a ragged row", h + g + "0.01,0.02,0.03\n", {"line 3"}},
      {"a header and no rows", h, {"no rows"}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    check_step_refuses("cartpole", c.csv, c.named);
  }
}

TEST_CASE("surge step reports unreadable input and unwritable output without leaving files", "[cli][step]") {
  ScratchFolder scratch("cli");
  const fs::path input = scratch / "in.csv", output = scratch / "out.csv";
  write_text(input, std::string(kHeader) + kGoodRow);
  const auto step = [&](const fs::path& in, const fs::path& out) {
    return run_surge("step --scenario cartpole --device cpu --input " + quoted(in.string()) + " --output " +
                     quoted(out.string()));
  };

  SECTION("an input file that does not exist") {
    const Result r = step(scratch / "missing.csv", output);
    CHECK(r.exit_code == 2);
    CHECK(is_one_line(r.err));
    CHECK(r.err.find("missing.csv") != std::string::npos);
    CHECK_FALSE(fs::exists(output));
  }
  SECTION("an input that is a folder") {
    fs::create_directories(scratch / "folder.csv");
    const Result r = step(scratch / "folder.csv", output);
    INFO("stderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(is_one_line(r.err));
    CHECK(r.err.find("folder.csv") != std::string::npos);
    CHECK(r.err.find("is a folder") != std::string::npos);
    CHECK_FALSE(fs::exists(output));
  }
  SECTION("an output in a folder that does not exist") {
    const fs::path nowhere = scratch.path() / "no_such_folder" / "out.csv";
    const Result r = step(input, nowhere);
    CHECK(r.exit_code == 2);
    CHECK(is_one_line(r.err));
    CHECK(r.err.find("no_such_folder") != std::string::npos);
    CHECK_FALSE(fs::exists(scratch / "no_such_folder"));
  }
  SECTION("bad input leaves an existing output as it was") {
    write_text(output, "previous contents\n");
    write_text(input, std::string(kHeader) + "0.01,0.02,0.03,0.04,7\n");
    const Result r = step(input, output);
    CHECK(r.exit_code == 2);
    CHECK(read_text(output) == "previous contents\n");
  }
  CHECK_FALSE(any_partial_file(scratch.path()));
}

TEST_CASE("surge step on the golden CSV reproduces Gymnasium's transitions", "[cli][step][golden]") {
  ScratchFolder scratch("cli");
  const std::string golden_csv = surge::testing::golden_path("cartpole");
  const fs::path output = scratch / "next.csv";
  const Result r = run_surge("step --scenario cartpole --device cpu --input " + quoted(golden_csv) + " --output " +
                             quoted(output.string()));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(any_partial_file(scratch.path()));

  const std::vector<std::string> state_names = {"x", "x_dot", "theta", "theta_dot"};
  const surge::testing::GoldenSet golden = surge::testing::load_golden("cartpole", state_names, 4);
  const surge::cli::CsvTable table = surge::cli::CsvTable::read(output.string());
  const std::vector<std::string> expected_header = {"next_x", "next_x_dot", "next_theta", "next_theta_dot",
                                                    "obs_0",  "obs_1",      "obs_2",      "obs_3",
                                                    "reward", "terminated"};
  REQUIRE(table.header == expected_header);
  REQUIRE(static_cast<std::int64_t>(table.rows.size()) == golden.rows);
  std::int64_t mismatches = 0;
  for (std::int64_t row = 0; row < golden.rows; ++row) {
    bool ok = true;
    for (int k = 0; k < 4; ++k) {
      ok &= surge::testing::within_golden_tolerance(surge::cli::parse_cell(table, row, k),
                                                    golden.next_state[row * 4 + k]);
      ok &= surge::testing::within_golden_tolerance(surge::cli::parse_cell(table, row, 4 + k), golden.obs[row * 4 + k]);
    }
    ok &= surge::cli::parse_cell(table, row, 8) == golden.reward[row];
    ok &= surge::cli::parse_cell(table, row, 9) == golden.terminated[row];
    if (!ok && mismatches++ < 5) UNSCOPED_INFO("row " << row + 1 << " differs from Gymnasium");
  }
  CHECK(mismatches == 0);
}

TEST_CASE("surge bench env writes the promised JSON", "[cli][bench]") {
  ScratchFolder scratch("cli");
  const fs::path json_path = scratch / "bench.json";
  const Result r =
      run_surge("bench env --device cpu --num-envs 256 --steps 8 --repeats 2 --json " + quoted(json_path.string()));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(fs::exists(json_path));
  CHECK_FALSE(any_partial_file(scratch.path()));
  const nlohmann::json json = nlohmann::json::parse(read_text(json_path));
  for (const char* key : {"scenario", "device", "num_envs", "steps", "env_steps_per_s", "bytes_per_step",
                          "copy_gb_per_s", "fraction_of_copy_bandwidth"})
    CHECK(json.contains(key));
  CHECK(json.value("scenario", "") == "cartpole");
  CHECK(json.value("device", "") == "cpu");
  CHECK(json.value("num_envs", 0) == 256);
  CHECK(json.value("steps", 0) == 8);
  // Four float32 observations, a float32 reward and two one-byte flags.
  CHECK(json.value("bytes_per_step", 0) == 22);
  CHECK(json.value("env_steps_per_s", 0.0) > 0.0);
  CHECK(json.value("copy_gb_per_s", 0.0) > 0.0);
  const double fraction = json.value("fraction_of_copy_bandwidth", 0.0);
  CHECK(fraction ==
        Approx(json.value("env_steps_per_s", 0.0) * 22e-9 / json.value("copy_gb_per_s", 1.0)).epsilon(1e-9));
  // The human-readable report goes to stdout.
  CHECK(r.out.find("env-steps/s") != std::string::npos);

  SECTION("a JSON path in a missing folder is refused before anything runs") {
    const std::string missing = (scratch.path() / "nope" / "b.json").string();
    const Result bad =
        run_surge("bench env --device cpu --num-envs 16 --steps 2 --repeats 1 --json " + quoted(missing));
    CHECK(bad.exit_code == 2);
    CHECK(is_one_line(bad.err));
    CHECK(bad.err.find("nope") != std::string::npos);
  }
}

TEST_CASE("--device cuda without a usable GPU is bad input", "[cli][device]") {
  ScratchFolder scratch("cli");
  const surge::CudaStatus& cuda = surge::cuda_status();
  const Result r = run_surge("bench env --device cuda --num-envs 256 --steps 8 --repeats 1");
  if (cuda.usable) {
    // This machine has a GPU: the same command must simply work.
    CHECK(r.exit_code == 0);
    return;
  }
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(is_one_line(r.err));
  CHECK(r.err.find("--device cuda") != std::string::npos);
  CHECK(r.err.find("--device cpu") != std::string::npos);  // the way out
  const Result step =
      run_surge("step --scenario cartpole --device cuda --input x.csv --output " + quoted(scratch / "out.csv"));
  CHECK(step.exit_code == 2);
  CHECK(is_one_line(step.err));
  CHECK_FALSE(fs::exists(scratch / "out.csv"));
}

TEST_CASE("surge step rejects actions of the wrong kind for the scenario", "[cli][step]") {
  struct Case {
    const char* scenario;
    std::string csv;
    std::vector<std::string> named;
  };
  const std::string acrobot = "s_theta1,s_theta2,s_dtheta1,s_dtheta2,action\n";
  const std::string pendulum = "s_theta,s_theta_dot,action\n";
  const Case cases[] = {
      {"acrobot", acrobot + "0.1,0.2,0,0,3\n", {"row 1", "action", "'3'", "0..2"}},
      {"acrobot", acrobot + "0.1,0.2,0,0,1\n0.1,0.2,0,0,1.5\n", {"row 2", "action", "'1.5'", "integer"}},
      {"mountain_car", "s_position,s_velocity,action\n-0.5,0,-1\n", {"row 1", "action", "'-1'", "0..2"}},
      {"cartpole", std::string(kHeader) + "0.01,0.02,0.03,0.04,left\n", {"row 1", "action", "left"}},
      {"pendulum", pendulum + "0.1,0.2,strong\n", {"row 1", "action", "strong"}},
      {"pendulum", pendulum + "0.1,0.2,1\n0.1,0.2,nan\n", {"row 2", "action", "nan"}},
      {"mountain_car_continuous", "s_position,s_velocity,action\n-0.5,0,\n", {"row 1", "action"}},
  };
  for (const Case& c : cases) {
    INFO(c.scenario << ": " << c.csv);
    check_step_refuses(c.scenario, c.csv, c.named);
  }
}

TEST_CASE("an unknown scenario gets the list of known ones from every command", "[cli]") {
  ScratchFolder scratch("cli");
  const std::string out = quoted(scratch / "out");
  const std::vector<std::string> commands = {"step --scenario nosuch --device cpu --input x.csv --output " + out,
                                             "bench env --scenario nosuch --device cpu",
                                             "bench train --scenario nosuch --device cpu",
                                             "bench sweep --scenario nosuch --device cpu",
                                             "bench roofline --scenario nosuch --device cpu",
                                             "train --scenario nosuch --device cpu --out " + out};
  for (const std::string& arguments : commands) {
    const Result r = run_surge(arguments);
    INFO("surge " << arguments << "\nstderr: " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(is_one_line(r.err));
    CHECK(r.err.find("'nosuch'") != std::string::npos);
    CHECK(r.err.find("cartpole, mountain_car, acrobot, pendulum, mountain_car_continuous") != std::string::npos);
    CHECK_FALSE(fs::exists(scratch / "out"));
  }
}

TEST_CASE("surge step --physics: fixed values and per-row draws, each row's value in the output",
          "[cli][step][physics]") {
  ScratchFolder scratch("cli");
  const fs::path input = scratch / "in.csv", output = scratch / "out.csv";
  // Pendulum: theta_dot' = theta_dot + (3 g / (2 l) sin(theta) + 3 / (m l^2) u) dt, as Gymnasium steps it.
  std::string csv = "s_theta,s_theta_dot,action\n";
  const int rows = 64;
  for (int row = 0; row < rows; ++row)
    csv += std::to_string(0.05 * row - 1.5) + ",0.25," + std::to_string(-1.0 + row / 32.0) + "\n";
  write_text(input, csv);
  auto expected_theta_dot = [](double theta, double theta_dot, double u, double g, double m, double l, double dt) {
    return theta_dot + (3.0 * g / (2.0 * l) * std::sin(theta) + 3.0 / (m * l * l) * u) * dt;
  };
  const surge::cli::CsvTable in = surge::cli::CsvTable::read(input.string());

  SECTION("fixed values") {
    const Result r = run_surge(
        "step --scenario pendulum --device cpu --physics gravity=9.81 --physics mass=2,length=0.8 "
        "--input " +
        quoted(input.string()) + " --output " + quoted(output.string()));
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    const surge::cli::CsvTable table = surge::cli::CsvTable::read(output.string());
    CHECK(table.column("param_mass") < 0);  // nothing randomised, no parameter columns
    for (int row = 0; row < rows; ++row) {
      const double reference = expected_theta_dot(surge::cli::parse_cell(in, row, 0), 0.25,
                                                  surge::cli::parse_cell(in, row, 2), 9.81, 2.0, 0.8, 0.05);
      CHECK(surge::cli::parse_cell(table, row, table.column("next_theta_dot")) ==
            Approx(reference).margin(1e-5).epsilon(1e-5));
    }
  }
  SECTION("a range: every row draws its own mass, written beside it") {
    const Result r = run_surge("step --scenario pendulum --device cpu --physics mass=0.5:2 --input " +
                               quoted(input.string()) + " --output " + quoted(output.string()));
    INFO("stderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    const surge::cli::CsvTable table = surge::cli::CsvTable::read(output.string());
    const int mass_column = table.column("param_mass");
    REQUIRE(mass_column >= 0);
    CHECK(table.column("param_gravity") < 0);
    std::vector<double> masses;
    for (int row = 0; row < rows; ++row) {
      const double mass = surge::cli::parse_cell(table, row, mass_column);
      CHECK(mass >= 0.5);
      CHECK(mass <= 2.0);
      masses.push_back(mass);
      const double reference = expected_theta_dot(surge::cli::parse_cell(in, row, 0), 0.25,
                                                  surge::cli::parse_cell(in, row, 2), 10.0, mass, 1.0, 0.05);
      CHECK(surge::cli::parse_cell(table, row, table.column("next_theta_dot")) ==
            Approx(reference).margin(1e-5).epsilon(1e-5));
    }
    std::sort(masses.begin(), masses.end());
    CHECK(std::unique(masses.begin(), masses.end()) - masses.begin() > rows * 9 / 10);
  }
}

TEST_CASE("bad --physics is one line, exit code 2 and nothing written, on every command", "[cli][physics]") {
  struct Case {
    std::string physics;
    std::vector<std::string> named;
  };
  const Case cases[] = {
      {"mass=0.2", {"cartpole has no physics parameter 'mass'", "masscart, masspole"}},
      {"masspole=0.3:0.2", {"masspole", "low must not exceed high"}},
      {"masspole=-0.1:0.2", {"masspole", "-0.1"}},
      {"masscart=-1", {"masscart", "-1"}},
      {"masspole=0.1:", {"--physics", "masspole=0.1:"}},
      {"masspole=[0.1,0.2]", {"--physics", "[0.1"}},
      {"masspole", {"--physics", "NAME=VALUE"}},
  };
  for (const Case& c : cases) {
    ScratchFolder scratch("cli");
    const fs::path input = scratch / "in.csv", output = scratch / "out.csv", json = scratch / "b.json";
    write_text(input, std::string(kHeader) + kGoodRow);
    const std::string physics = " --physics " + quoted(c.physics);
    const std::vector<std::string> commands = {
        "step --scenario cartpole --device cpu --input " + quoted(input.string()) + " --output " +
            quoted(output.string()) + physics,
        "bench env --device cpu --num-envs 16 --steps 2 --repeats 1 --json " + quoted(json.string()) + physics,
        "bench train --device cpu --num-envs 16 --num-steps 4 --repeats 1 --iterations 1 --json " +
            quoted(json.string()) + physics,
        "bench sweep --device cpu --from 16 --to 32 --steps 2 --repeats 1 --json " + quoted(json.string()) + physics,
        "train --device cpu --total-steps 512 --out " + quoted(scratch / "run") + physics,
    };
    for (const std::string& arguments : commands) {
      const Result r = run_surge(arguments);
      INFO("surge " << arguments << "\nstderr: " << r.err);
      CHECK(r.exit_code == 2);
      CHECK(is_one_line(r.err));
      for (const std::string& word : c.named) CHECK(r.err.find(word) != std::string::npos);
      CHECK_FALSE(fs::exists(output));
      CHECK_FALSE(fs::exists(json));
      CHECK_FALSE(fs::exists(scratch / "run"));
      CHECK_FALSE(any_partial_file(scratch.path()));
    }
  }
}

TEST_CASE("surge bench env reports the randomised physics on stdout and in its JSON", "[cli][bench][physics]") {
  ScratchFolder scratch("cli");
  const fs::path json_path = scratch / "bench.json";
  const Result r = run_surge(
      "bench env --scenario acrobot --device cpu --num-envs 64 --steps 8 --repeats 1 "
      "--physics link_mass_2=0.5:1.5 --physics gravity=9 --json " +
      quoted(json_path.string()));
  INFO("stderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("randomised physics       link_mass_2 ~ U(0.5, 1.5)\n") != std::string::npos);
  CHECK(r.out.find("physics vs defaults      link_mass_2 ~ U(0.5, 1.5), gravity = 9\n") != std::string::npos);
  const nlohmann::json json = nlohmann::json::parse(read_text(json_path));
  CHECK(json.value("randomised_physics", "") == "link_mass_2 ~ U(0.5, 1.5)");
  const nlohmann::json& physics = json.at("physics");
  CHECK(physics.size() == 8);  // every acrobot parameter
  CHECK(physics.at("link_mass_2") == nlohmann::json::array({0.5, 1.5}));
  CHECK(physics.at("gravity").get<double>() == 9.0);
  CHECK(physics.at("link_mass_1").get<double>() == 1.0);
  // Without --physics: the defaults, nothing randomised.
  const Result plain = run_surge("bench env --device cpu --num-envs 16 --steps 2 --repeats 1");
  CHECK(plain.out.find("randomised physics       none\n") != std::string::npos);
  CHECK(plain.out.find("physics vs defaults      defaults\n") != std::string::npos);
}

TEST_CASE("flags and CSV cells read numbers by one rule: spaces around and a leading + are fine", "[cli][numbers]") {
  using surge::cli::parse_integer_text;
  using surge::cli::parse_number_text;
  for (const char* text : {"16", " 16", "16 ", "+16", "\t16\t"}) {
    CHECK(parse_integer_text(text) == 16LL);
    CHECK(parse_number_text(text) == 16.0);
  }
  CHECK(parse_integer_text("-3") == -3LL);
  CHECK(parse_number_text("-.5e-1") == -0.05);
  CHECK(parse_number_text("1.") == 1.0);
  for (const char* text : {"", " ", "1 6", "16x", "0x10", "+", "-", "--1", "9223372036854775808"})
    CHECK_FALSE(parse_integer_text(text));
  for (const char* text : {"", ".", "e5", "1e", "1e+", "0x1p3", "inf", "nan", "1e999", "1,5", "1.5.2"})
    CHECK_FALSE(parse_number_text(text));
  // A NUL inside a number does not end it early.
  CHECK_FALSE(
      parse_integer_text(std::string("1\0"
                                     "6",
                                     3)));
  CHECK_FALSE(
      parse_number_text(std::string("0\0"
                                    "5",
                                    3)));
}
