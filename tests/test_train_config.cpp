// Config files and --set overrides: layering, presets, type and range errors as one-line InputErrors,
// and the round trip through to_toml().
#include <catch2/catch.hpp>

#include "rl/train_config.hpp"
#include "scenarios/train_configs.hpp"
#include "sim/error.hpp"

using surge::InputError;
using surge::rl::TrainConfig;

namespace {
const char* kText = R"(
num_envs = 8
learning_rate = 1e-3
hidden = [32, 16]
[cuda]
num_envs = 4096
[presets.small]
num_envs = 2
num_steps = 8
activation = "relu"
)";
}

TEST_CASE("config layers: defaults, file, [cuda], preset", "[config]") {
  const TrainConfig cpu = surge::rl::load_train_config(kText, "test.toml", false, "");
  CHECK(cpu.num_envs == 8);
  CHECK(cpu.learning_rate == 1e-3);
  CHECK(cpu.hidden == std::vector<int>{32, 16});
  CHECK(cpu.num_steps == TrainConfig{}.num_steps);  // untouched keys keep the built-in default
  CHECK(surge::rl::load_train_config(kText, "test.toml", true, "").num_envs == 4096);
  const TrainConfig small = surge::rl::load_train_config(kText, "test.toml", true, "small");
  CHECK(small.num_envs == 2);
  CHECK(small.num_steps == 8);
  CHECK(small.activation == "relu");
  CHECK(surge::rl::train_config_presets(kText, "test.toml") == std::vector<std::string>{"small"});
}

TEST_CASE("bad config input is an InputError naming the key or the file", "[config]") {
  CHECK_THROWS_WITH(surge::rl::load_train_config("num_envz = 3", "f.toml", false, ""),
                    Catch::Contains("unknown config key 'num_envz'") && Catch::Contains("f.toml"));
  CHECK_THROWS_AS(surge::rl::load_train_config("num_envs = \"many\"", "f.toml", false, ""), InputError);
  CHECK_THROWS_WITH(surge::rl::load_train_config("num_envs = 2.5", "f.toml", false, ""), Catch::Contains("integer"));
  CHECK_THROWS_WITH(surge::rl::load_train_config("num_envs = ", "f.toml", false, ""), Catch::Contains("f.toml:1"));
  CHECK_THROWS_WITH(surge::rl::load_train_config(kText, "f.toml", false, "huge"),
                    Catch::Contains("unknown preset 'huge'") && Catch::Contains("small"));
  TrainConfig config;
  CHECK_THROWS_WITH(surge::rl::apply_config_setting(config, "gama=0.9"), Catch::Contains("unknown config key 'gama'"));
  CHECK_THROWS_WITH(surge::rl::apply_config_setting(config, "gamma"), Catch::Contains("key=value"));
  CHECK_THROWS_WITH(surge::rl::apply_config_setting(config, "anneal_lr=maybe"), Catch::Contains("true or false"));
  CHECK_THROWS_WITH(surge::rl::apply_config_setting(config, "activation=sigmoid"), Catch::Contains("tanh"));
  CHECK_THROWS_AS(surge::rl::apply_config_setting(config, "hidden=[64, 0]"), InputError);
  CHECK_THROWS_AS(surge::rl::apply_config_setting(config, "seed=-1"), InputError);
}

TEST_CASE("--set reads TOML values, bare words and comma lists", "[config]") {
  TrainConfig config;
  surge::rl::apply_config_setting(config, "learning_rate=3e-4");
  surge::rl::apply_config_setting(config, "total_steps=1e6");
  surge::rl::apply_config_setting(config, "activation=relu");
  surge::rl::apply_config_setting(config, "hidden=128,64,32");
  surge::rl::apply_config_setting(config, "anneal_lr=false");
  surge::rl::apply_config_setting(config, "target_kl=0.02");
  CHECK(config.learning_rate == 3e-4);
  CHECK(config.total_steps == 1000000);
  CHECK(config.activation == "relu");
  CHECK(config.hidden == std::vector<int>{128, 64, 32});
  CHECK_FALSE(config.anneal_lr);
  CHECK(config.target_kl == 0.02);
}

TEST_CASE("validation rejects impossible combinations in one line", "[config]") {
  TrainConfig config;
  config.num_envs = 3;
  config.num_steps = 5;
  config.num_minibatches = 4;
  CHECK_THROWS_WITH(config.validate(), Catch::Contains("does not split into num_minibatches = 4"));
  config.num_minibatches = 1;
  config.total_steps = 10;
  CHECK_THROWS_WITH(config.validate(), Catch::Contains("total_steps = 10"));
  config.total_steps = 1000;
  config.gamma = 1.5;
  CHECK_THROWS_WITH(config.validate(), Catch::Contains("gamma = 1.5"));
  config.gamma = 0.99;
  CHECK_NOTHROW(config.validate());
  config.num_minibatches = 15;
  CHECK_THROWS_WITH(config.validate(), Catch::Contains("normalise advantages"));
}

TEST_CASE("sizes whose products would overflow are refused before anything divides by them", "[config]") {
  TrainConfig config;
  config.norm_adv = false;
  config.num_minibatches = 1;
  // 2^20 x 2^44 is 2^64: it wrapped to a batch of 0, and total_steps / 0 ended the process.
  config.num_envs = std::int64_t(1) << 20;
  config.num_steps = std::int64_t(1) << 44;
  CHECK_THROWS_WITH(config.validate(), Catch::Contains("num_steps = 17592186044416 is out of range"));
  config.num_steps = std::int64_t(1) << 24;
  config.num_envs = std::int64_t(1) << 32;
  config.total_steps = std::int64_t(1) << 50;
  CHECK_THROWS_WITH(config.validate(), Catch::Contains("num_envs x num_steps = 4294967296 x 16777216"));
  config.num_envs = std::int64_t(1) << 33;
  CHECK_THROWS_WITH(config.validate(), Catch::Contains("num_envs = 8589934592 is out of range"));
  config.num_envs = 4;
  config.num_steps = 128;
  config.total_steps = (std::int64_t(1) << 50) + 1;
  CHECK_THROWS_WITH(config.validate(), Catch::Contains("total_steps"));
  config.total_steps = std::int64_t(1) << 50;
  CHECK_NOTHROW(config.validate());
  CHECK(config.num_iterations() == (std::int64_t(1) << 50) / 512);
  config.update_epochs = std::int64_t(1) << 40;
  CHECK_THROWS_WITH(config.validate(), Catch::Contains("update_epochs"));
  config.update_epochs = 4;
  config.hidden = std::vector<int>(65, 8);
  CHECK_THROWS_WITH(config.validate(), Catch::Contains("at most 64 hidden layers"));
}

TEST_CASE("number keys must fit float32; --set takes one line; long input is echoed cut short", "[config]") {
  TrainConfig config;
  for (const char* setting : {"learning_rate=1e300", "obs_clip=inf", "gamma=-1e39", "vf_coef=nan"})
    CHECK_THROWS_WITH(surge::rl::apply_config_setting(config, setting), Catch::Contains("does not fit"));
  CHECK_THROWS_WITH(surge::rl::load_train_config("clip_coef = 1e300\n", "f.toml", false, ""),
                    Catch::Contains("f.toml: clip_coef = 1e+300 does not fit"));
  surge::rl::apply_config_setting(config, "learning_rate=3.4e38");
  CHECK(config.learning_rate == 3.4e38);
  CHECK_THROWS_WITH(surge::rl::apply_config_setting(config, "learning_rate=1e-3\nnum_envs=0"),
                    Catch::Contains("one key=value per --set"));
  CHECK(config.num_envs == 4);
  const std::string key(100000, 'k');
  try {
    surge::rl::load_train_config(key + " = 1\n", "f.toml", false, "");
    FAIL("an unknown key was accepted");
  } catch (const InputError& error) {
    const std::string message = error.what();
    CHECK(message.size() < 1000);
    CHECK_THAT(message, Catch::Contains("unknown config key 'kkkk") && Catch::Contains("…'"));
  }
}

TEST_CASE("to_toml reads back to the same config", "[config]") {
  TrainConfig config;
  config.num_envs = 1234;
  config.learning_rate = 3.3e-4;
  config.hidden = {7, 9};
  config.activation = "relu";
  config.target_kl = 0.015;
  config.cuda_graph = false;
  config.seed = 99;
  const TrainConfig back = surge::rl::load_train_config(config.to_toml(), "round trip", false, "");
  CHECK(back.to_toml() == config.to_toml());
  CHECK(back.learning_rate == config.learning_rate);
  CHECK(back.hidden == config.hidden);
}

TEST_CASE("a string key with backslashes, quotes or control characters reads back the same", "[config]") {
  // Found by fuzzing: --set scenario=a\\b (not TOML, so taken as text) was written without escapes.
  TrainConfig config;
  surge::rl::apply_config_setting(config, "scenario= 5.0-norm\\\\h");
  for (const std::string odd : {std::string("a\\b\"c\td"), std::string(" 5.0-norm\\\\h"), std::string("x\x01y")}) {
    config.scenario = odd;
    const TrainConfig back = surge::rl::load_train_config(config.to_toml(), "round trip", false, "");
    CHECK(back.scenario == odd);
    CHECK(back.to_toml() == config.to_toml());
  }
}

TEST_CASE("the built-in CartPole config is valid, and its cleanrl preset is CleanRL's ppo.py", "[config]") {
  const std::string text = surge::default_train_config("cartpole");
  REQUIRE_FALSE(text.empty());
  CHECK(surge::default_train_config("no-such-scenario").empty());
  const TrainConfig tuned = surge::rl::load_train_config(text, "cartpole.toml", false, "");
  CHECK_NOTHROW(tuned.validate());
  CHECK_NOTHROW(surge::rl::load_train_config(text, "cartpole.toml", true, "").validate());
  const TrainConfig cleanrl = surge::rl::load_train_config(text, "cartpole.toml", false, "cleanrl");
  CHECK(cleanrl.num_envs == 4);
  CHECK(cleanrl.num_steps == 128);
  CHECK(cleanrl.total_steps == 500000);
  CHECK(cleanrl.learning_rate == 2.5e-4);
  CHECK(cleanrl.anneal_lr);
  CHECK(cleanrl.update_epochs == 4);
  CHECK(cleanrl.num_minibatches == 4);
  CHECK(cleanrl.gamma == 0.99);
  CHECK(cleanrl.gae_lambda == 0.95);
  CHECK(cleanrl.clip_coef == 0.2);
  CHECK(cleanrl.ent_coef == 0.01);
  CHECK(cleanrl.vf_coef == 0.5);
  CHECK(cleanrl.max_grad_norm == 0.5);
  CHECK(cleanrl.adam_eps == 1e-5);
  CHECK(cleanrl.norm_adv);
  CHECK(cleanrl.clip_vloss);
  CHECK(cleanrl.target_kl == 0.0);
  CHECK(cleanrl.hidden == std::vector<int>{64, 64});
  CHECK(cleanrl.activation == "tanh");
}

TEST_CASE("[physics] tables: values and ranges, layered by name, round-tripped", "[config][physics]") {
  const char* text = R"(
num_envs = 8
[physics]
masspole = [0.05, 0.2]
length = 0.6
[cuda.physics]
length = [0.4, 0.6]
[presets.heavy.physics]
masscart = 2
)";
  const TrainConfig cpu = surge::rl::load_train_config(text, "dr.toml", false, "");
  REQUIRE(cpu.physics.size() == 2);
  CHECK(cpu.physics[0].name == "masspole");
  CHECK(cpu.physics[0].is_range);
  CHECK(cpu.physics[0].low == 0.05);
  CHECK(cpu.physics[0].high == 0.2);
  CHECK(cpu.physics[1].name == "length");
  CHECK_FALSE(cpu.physics[1].is_range);
  CHECK(cpu.physics[1].low == 0.6);
  const TrainConfig gpu = surge::rl::load_train_config(text, "dr.toml", true, "heavy");
  REQUIRE(gpu.physics.size() == 3);
  CHECK(gpu.physics[1].is_range);  // [cuda.physics] replaces the value by name
  CHECK(gpu.physics[1].low == 0.4);
  CHECK(gpu.physics[2].name == "masscart");
  CHECK(gpu.physics[2].low == 2.0);

  // --set physics.NAME takes a number or a [low, high] list, and overrides by name.
  TrainConfig config = cpu;
  surge::rl::apply_config_setting(config, "physics.masspole=0.3");
  surge::rl::apply_config_setting(config, "physics.gravity=[9,10.5]");
  REQUIRE(config.physics.size() == 3);
  CHECK_FALSE(config.physics[0].is_range);
  CHECK(config.physics[0].low == 0.3);
  CHECK(config.physics[2].name == "gravity");
  CHECK(config.physics[2].high == 10.5);

  // config.toml as a run writes it: the table comes back the same.
  const std::string toml = config.to_toml();
  CHECK(toml.find("\n[physics]\nmasspole = 0.3\nlength = 0.6\ngravity = [9, 10.5]\n") != std::string::npos);
  const TrainConfig back = surge::rl::load_train_config(toml, "round trip", false, "");
  CHECK(back.to_toml() == toml);
  REQUIRE(back.physics.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(back.physics[k].name == config.physics[k].name);
    CHECK(back.physics[k].low == config.physics[k].low);
    CHECK(back.physics[k].high == config.physics[k].high);
    CHECK(back.physics[k].is_range == config.physics[k].is_range);
  }
  // No table at all when nothing was set.
  CHECK(TrainConfig{}.to_toml().find("[physics]") == std::string::npos);
}

TEST_CASE("malformed [physics] entries are InputErrors naming the entry", "[config][physics]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[physics]\nmasspole = [0.1, 0.2, 0.3]", "physics.masspole"},
      {"[physics]\nmasspole = [0.1]", "physics.masspole"},
      {"[physics]\nmasspole = \"heavy\"", "physics.masspole"},
      {"[physics]\nmasspole = [\"a\", 0.2]", "physics.masspole"},
      {"[physics]\nmasspole = nan", "physics.masspole"},
      {"[physics]\nmasspole = [0.1, inf]", "physics.masspole"},
      {"physics = 3", "'physics' must be a table"},
  };
  for (const auto& [text, named] : cases) {
    INFO(text);
    CHECK_THROWS_AS(surge::rl::load_train_config(text, "f.toml", false, ""), InputError);
    CHECK_THROWS_WITH(surge::rl::load_train_config(text, "f.toml", false, ""),
                      Catch::Contains(named) && Catch::Contains("f.toml"));
  }
  TrainConfig config;
  CHECK_THROWS_WITH(surge::rl::apply_config_setting(config, "physics.masspole=heavy"),
                    Catch::Contains("physics.masspole=heavy"));
  CHECK_THROWS_WITH(surge::rl::apply_config_setting(config, "physics.masspole=[1,2,3]"),
                    Catch::Contains("physics.masspole"));
  CHECK(config.physics.empty());
}
