// --grid and --agents (docs/agents.md): the axes as parsed, the agents of their cross product with
// exactly their values and seeds, refused keys, and the same through `surge train --dry-run`.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "rl/agent_grid.hpp"
#include "sim/error.hpp"
#include "tests/support/run_surge.hpp"

using surge::InputError;
using namespace surge::rl;

namespace {
std::string message_of(const std::string& text) {
  try {
    parse_grid_axis(text);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}
}  // namespace

TEST_CASE("a --grid option is a key and its values", "[agents]") {
  const GridAxis lr = parse_grid_axis("lr=1e-4, 3e-4,1e-3");
  CHECK(lr.key == "learning_rate");
  CHECK(lr.values == std::vector<std::string>{"1e-4", "3e-4", "1e-3"});
  const GridAxis physics = parse_grid_axis("physics.masspole=[0.05, 0.2],0.1");
  CHECK(physics.key == "physics.masspole");
  CHECK(physics.values == std::vector<std::string>{"[0.05, 0.2]", "0.1"});
  CHECK(parse_grid_axis("ent_coef=0").values == std::vector<std::string>{"0"});
}

TEST_CASE("a key that changes shapes, or is not per agent, is refused naming what a grid may vary", "[agents]") {
  for (const char* key : {"num_envs", "hidden", "num_steps", "update_epochs"}) {
    const std::string message = message_of(std::string(key) + "=64,128");
    CHECK(message.find("--grid '" + std::string(key) + "=64,128': " + key + " changes the agents' buffer shapes") == 0);
    CHECK(message.find("a grid may vary learning_rate, ") != std::string::npos);
  }
  CHECK(message_of("seed=1,2").find("is what --agents K varies") != std::string::npos);
  CHECK(message_of("cuda_graph=true,false").find("cannot vary across the agents") != std::string::npos);
  CHECK(message_of("no_such_key=1").find("cannot vary") != std::string::npos);
  CHECK(message_of("lr").find("is not of the form key=v1,v2,...") != std::string::npos);
  CHECK(message_of("=1,2").find("names no key") != std::string::npos);
  CHECK(message_of("lr=1e-4,,3e-4").find("has an empty value") != std::string::npos);
  CHECK(message_of("lr=1e-4\nnum_envs=8").find("line break") != std::string::npos);
  for (const char* text : {"num_envs=64,128", "seed=1,2", "lr=1e-4,,3e-4"})
    CHECK(message_of(text).find('\n') == std::string::npos);
}

TEST_CASE("the agents are the grid's cross product times the seeds, each with exactly its values", "[agents]") {
  TrainConfig base;
  base.seed = 7;
  base.num_agents = 2;
  const std::vector<GridAxis> axes = {parse_grid_axis("lr=1e-4,3e-4,1e-3"), parse_grid_axis("ent_coef=0,0.01")};
  const std::vector<AgentSpec> agents = expand_agents(base, axes);
  REQUIRE(agents.size() == 12);
  const double lrs[] = {1e-4, 3e-4, 1e-3};
  const double ents[] = {0.0, 0.01};
  for (std::size_t k = 0; k < agents.size(); ++k) {
    const AgentSpec& agent = agents[k];
    const std::size_t point = k / 2, seed_index = k % 2;  // the first axis varies slowest, seeds fastest
    CHECK(agent.grid_point == static_cast<std::int64_t>(point));
    CHECK(agent.seed_index == static_cast<std::int64_t>(seed_index));
    CHECK(agent.config.seed == 7 + seed_index);
    CHECK(agent.config.num_agents == 1);
    CHECK(agent.config.learning_rate == lrs[point / 2]);
    CHECK(agent.config.ent_coef == ents[point % 2]);
    REQUIRE(agent.grid_values.size() == 2);
    CHECK(agent.grid_values[0].first == "learning_rate");
    CHECK(agent.grid_values[1].first == "ent_coef");
    // Everything the grid does not name is the base's.
    TrainConfig expected = base;
    expected.num_agents = 1;
    expected.seed = agent.config.seed;
    expected.learning_rate = agent.config.learning_rate;
    expected.ent_coef = agent.config.ent_coef;
    CHECK(agent.config.to_toml() == expected.to_toml());
  }
}

TEST_CASE("without a grid, --agents K makes K seeds of one config", "[agents]") {
  TrainConfig base;
  base.seed = 3;
  base.num_agents = 4;
  const std::vector<AgentSpec> agents = expand_agents(base, {});
  REQUIRE(agents.size() == 4);
  for (std::size_t k = 0; k < 4; ++k) {
    CHECK(agents[k].config.seed == 3 + k);
    CHECK(agents[k].grid_point == 0);
    CHECK(agents[k].grid_values.empty());
  }
}

TEST_CASE("a grid value the config refuses names the grid point", "[agents]") {
  const TrainConfig base;
  CHECK_THROWS_WITH(expand_agents(base, {parse_grid_axis("ent_coef=0,-1")}),
                    Catch::StartsWith("--grid point ent_coef=-1: config ent_coef = -1 is out of range"));
  CHECK_THROWS_WITH(expand_agents(base, {parse_grid_axis("lr=fast")}), Catch::StartsWith("--grid learning_rate=fast"));
  CHECK_THROWS_WITH(expand_agents(base, {parse_grid_axis("lr=1e-4"), parse_grid_axis("learning_rate=3e-4")}),
                    Catch::Contains("is given twice"));
  TrainConfig many = base;
  many.num_agents = 65536;
  CHECK_THROWS_WITH(expand_agents(many, {parse_grid_axis("lr=1e-4,3e-4")}), Catch::Contains("more than 65536 agents"));
  CHECK_NOTHROW(expand_agents(TrainConfig{}, {}));
}

TEST_CASE("num_agents is a config key that round-trips and is range checked", "[agents]") {
  TrainConfig config;
  surge::rl::apply_config_setting(config, "num_agents=16");
  CHECK(config.num_agents == 16);
  CHECK(surge::rl::load_train_config(config.to_toml(), "round.toml", false, "").num_agents == 16);
  config.num_agents = 0;
  CHECK_THROWS_WITH(config.validate(), Catch::Contains("num_agents"));
}

TEST_CASE("surge train --agents --grid: the dry run lists the agents; a refused key exits 2 with one line",
          "[agents][cli]") {
  using surge::testing::run_surge;
  const auto listed = run_surge("train --device cpu --agents 2 --grid lr=1e-4,3e-4 --grid ent_coef=0,0.01 --dry-run");
  INFO(listed.output());
  CHECK(listed.exit_code == 0);
  CHECK(listed.out.find("8 agents: 4 grid points x 2 seeds\n") == 0);
  CHECK(listed.out.find("agent  grid_point  seed  learning_rate  ent_coef\n") != std::string::npos);
  CHECK(listed.out.find("\n7      3           2     3e-4           0.01\n") != std::string::npos);

  const auto refused = run_surge("train --device cpu --grid num_envs=4,8 --out /nonexistent/agents_test");
  INFO(refused.output());
  CHECK(refused.exit_code == 2);
  CHECK(refused.out.empty());
  CHECK(surge::testing::line_count(refused.err) == 1);
  CHECK(refused.err.find("surge train: --grid 'num_envs=4,8': num_envs changes the agents' buffer shapes") == 0);

  // The dry run gives one agent's plan and the total of all of them.
  CHECK(listed.out.find("each agent:\n") != std::string::npos);
  CHECK(listed.out.find("\nall 8 agents: ") != std::string::npos);

  // A bad --target-mode stops before anything is written.
  const auto mode = run_surge("train --device cpu --agents 2 --target-mode some --out /nonexistent/agents_test");
  CHECK(mode.exit_code == 2);
  CHECK(surge::testing::line_count(mode.err) == 1);
  CHECK(mode.err.find("surge train: --target-mode 'some' is not a mode; give any, all or median") == 0);

  // A grid's physics parameter is checked against the scenario like --physics.
  const auto physics = run_surge("train --device cpu --grid physics.nope=1,2 --dry-run");
  CHECK(physics.exit_code == 2);
  CHECK(physics.err.find("surge train: cartpole has no physics parameter 'nope'") == 0);
}

TEST_CASE("surge bench train --agents K counts every agent's steps; --preset gives the preset's sizes",
          "[agents][cli][bench]") {
  using surge::testing::run_surge;
  const auto json = std::filesystem::temp_directory_path() / "surge_test_agent_bench.json";
  std::filesystem::remove(json);
  const auto has = [](const std::string& text, const char* piece) { return text.find(piece) != std::string::npos; };
  const auto three = run_surge(
      "bench train --device cpu --num-envs 8 --num-steps 4 --agents 3 --repeats 1 "
      "--iterations 1 --json " +
      json.string());
  const std::string json_text = surge::testing::read_text(json);
  std::filesystem::remove(json);
  const auto preset = run_surge("bench train --device cpu --preset cleanrl --repeats 1 --iterations 1");
  INFO(three.output() + preset.output());
  CHECK((three.exit_code == 0 && preset.exit_code == 0));
  CHECK(has(three.output(), "8 envs x 4 steps x 3 agents"));
  CHECK(has(three.output(), "agents                    3, "));
  CHECK((has(json_text, "\"agents\": 3") && has(json_text, "\"num_envs\": 8")));
  // The timed repeats' CPU time per env-step and the cores it kept busy.
  const auto number_after = [](const std::string& text, const std::string& key) {
    const std::size_t at = text.find("\"" + key + "\": ");
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + key.size() + 4));
  };
  const double cpu_us = number_after(json_text, "cpu_us_per_env_step"), busy = number_after(json_text, "cores_busy");
  CHECK(cpu_us > 0);
  CHECK(busy > 0);
  CHECK(has(three.output(), "CPU per env-step, cpu "));
  CHECK(has(preset.output(), "num_envs x steps          4 x 128"));
  CHECK(run_surge("bench train --device cpu --agents 0").exit_code == 2);
  // With agents on the CPU a repeat is one round of surge train --agents unless --iterations says otherwise.
  const auto round = run_surge("bench train --device cpu --num-envs 4 --num-steps 4 --agents 2 --repeats 1");
  CHECK(has(round.err, " repeats of 16 iterations"));
}
