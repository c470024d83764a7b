// Pixel observations at the edges a user touches: the config keys (observation, frame_size, grayscale,
// frame_stack) and their refusals, `surge train` refusing pixels with normalize_obs, `surge step
// --observation pixels` writing each row's frame as a PNG, and `surge bench env --observation pixels`.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "rl/train_config.hpp"
#include "scenarios/scene_render.hpp"
#include "sim/error.hpp"
#include "tests/support/run_surge.hpp"
#include "tests/support/scratch_folder.hpp"
#include "tools/cli/io.hpp"
#include "tools/video/png.hpp"

using namespace surge;
using surge::testing::read_text;
using surge::testing::Result;
using surge::testing::run_surge;
using surge::testing::ScratchFolder;

namespace {

rl::TrainConfig config_of(const std::string& toml) { return rl::load_train_config(toml, "test.toml", false, ""); }

// A bad-input exit: code 2, one line on stderr that starts with the command's name and says `what`.
void check_refused(const Result& r, const std::string& command, const std::string& what) {
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(surge::testing::line_count(r.err) == 1);
  CHECK(r.err.rfind("surge " + command + ": ", 0) == 0);
  CHECK(r.err.find(what) != std::string::npos);
}

}  // namespace

TEST_CASE("the pixel keys read, write back and refuse nonsense", "[pixels][config]") {
  const rl::TrainConfig defaults = config_of("");
  CHECK(defaults.observation == "vector");
  CHECK_FALSE(defaults.pixel_observations());
  CHECK(defaults.frame_size == 84);
  CHECK(defaults.grayscale);
  CHECK(defaults.frame_stack == 4);
  const rl::TrainConfig pixels =
      config_of("observation = \"pixels\"\nframe_size = 64\ngrayscale = false\nframe_stack = 2\n");
  CHECK(pixels.pixel_observations());
  CHECK(pixels.frame_size == 64);
  CHECK_FALSE(pixels.grayscale);
  CHECK(pixels.frame_stack == 2);
  CHECK_NOTHROW(pixels.validate());
  const rl::TrainConfig again = config_of(pixels.to_toml());
  CHECK(again.to_toml() == pixels.to_toml());
  CHECK(again.frame_size == 64);

  CHECK_THROWS_AS(config_of("observation = \"rgb\"\n"), InputError);
  CHECK_THROWS_AS(config_of("frame_size = \"big\"\n"), InputError);
  CHECK_THROWS_WITH(config_of("frame_size = 4\n").validate(), Catch::Contains("frame_size = 4"));
  CHECK_THROWS_WITH(config_of("frame_stack = 0\n").validate(), Catch::Contains("frame_stack = 0"));
  CHECK_THROWS_WITH(config_of("num_steps = 2\nnum_minibatches = 1\nframe_stack = 3\n").validate(),
                    Catch::Contains("frame_stack = 3"));
  CHECK_NOTHROW(rl::require_trainable(pixels));
  CHECK_THROWS_WITH(rl::require_trainable(config_of("observation = \"pixels\"\nnormalize_obs = true\n")),
                    Catch::Contains("normalize_obs"));
  CHECK_NOTHROW(rl::require_trainable(defaults));
}

TEST_CASE("surge train refuses pixel observations with normalize_obs in one line and writes nothing", "[pixels][cli]") {
  ScratchFolder dir("pixel_train");
  const std::string out = dir / "run";
  const Result r = run_surge(
      "train --scenario cartpole --device cpu --set observation=pixels --set normalize_obs=true --out " + out);
  check_refused(r, "train", "normalize_obs");
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("surge step --observation pixels writes every row's next frame as a PNG", "[pixels][cli]") {
  ScratchFolder dir("pixel_step");
  const std::string input = dir / "in.csv", output = dir / "out.csv", frames = dir / "frames";
  std::ofstream(input) << "s_x,s_x_dot,s_theta,s_theta_dot,action\n"
                          "0,0,0,0,1\n"
                          "0.5,-0.2,0.1,0.3,0\n"
                          "-1.8,1,-0.18,-1,1\n";
  for (const bool grey : {false, true}) {
    INFO("grey " << grey);
    std::filesystem::remove_all(frames);
    const Result r =
        run_surge("step --scenario cartpole --device cpu --input " + input + " --output " + output +
                  " --observation pixels --frame-size 32 --frames " + frames + (grey ? " --grayscale" : ""));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find("3 frames of 32x32") != std::string::npos);
    // Each PNG is the frame of the next state the CSV reports, encoded as surge's PNG writer does.
    const cli::CsvTable table = cli::CsvTable::read(output);
    std::vector<float> next;
    for (std::size_t row = 0; row < table.rows.size(); ++row)
      for (const char* name : {"next_x", "next_x_dot", "next_theta", "next_theta_dot"})
        next.push_back(static_cast<float>(cli::parse_cell(table, row, table.column(name))));
    const FrameSize size{32, 32, grey ? 1 : 3};
    std::vector<std::uint8_t> expected(static_cast<std::size_t>(3 * size.bytes()));
    render_states("cartpole", next.data(), nullptr, 3, size, expected.data());
    for (int row = 0; row < 3; ++row) {
      const std::vector<std::uint8_t> png =
          video::encode_png(expected.data() + row * size.bytes(), 32, 32, size.channels);
      const std::string name = "row_00000" + std::to_string(row + 1) + ".png";
      CHECK(read_text(std::filesystem::path(frames) / name) == std::string(png.begin(), png.end()));
    }
    CHECK(std::distance(std::filesystem::directory_iterator(frames), std::filesystem::directory_iterator()) == 3);
  }
  std::filesystem::remove_all(frames);
  std::filesystem::remove(output);
  const std::string base = "step --scenario cartpole --device cpu --input " + input + " --output " + output;
  check_refused(run_surge(base + " --frames " + frames), "step", "--observation pixels");
  check_refused(run_surge(base + " --observation pixels"), "step", "--frames");
  check_refused(run_surge(base + " --observation pictures --frames " + frames), "step", "pictures");
  check_refused(run_surge(base + " --observation pixels --frame-size 4 --frames " + frames), "step", "frame-size");
  CHECK_FALSE(std::filesystem::exists(output));
  CHECK_FALSE(std::filesystem::exists(frames));
}

TEST_CASE("surge bench env --observation pixels measures pixel stepping", "[pixels][cli][bench]") {
  const Result r = run_surge(
      "bench env --device cpu --observation pixels --frame-size 16 --grayscale --frame-stack 3 --num-envs 8 "
      "--steps 6 --repeats 2");
  INFO(r.output());
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("(stack 3 of 16x16 grey)") != std::string::npos);
  CHECK(r.out.find("bytes written per step   256 (the frame)") != std::string::npos);
  CHECK(r.out.find("and by the gather      768 (the stack)") != std::string::npos);
  CHECK(r.out.find("with stacks gathered") != std::string::npos);
  const Result plan = run_surge("bench env --device cpu --observation pixels --num-envs 8 --steps 6 --dry-run");
  CHECK(plan.exit_code == 0);
  CHECK(plan.out.find("pixels.frames") != std::string::npos);
  check_refused(run_surge("bench env --device cpu --observation pixels --frame-stack 7 --steps 6"), "bench env",
                "frame_stack 7");
  check_refused(run_surge("bench env --device cpu --frame-size 84"), "bench env", "--observation pixels");
}
