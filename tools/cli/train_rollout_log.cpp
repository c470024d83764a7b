#include "tools/cli/train_rollout_log.hpp"

#include <algorithm>

#include "rl/io/rollout_file.hpp"
#include "rl/io/rollout_schema.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/version.hpp"

namespace surge::cli {

MemoryPlan rollout_log_memory_plan(const rl::TrainConfig& config, const ScenarioSpec& spec, Device device,
                                   std::int64_t log_envs) {
  MemoryPlan plan(device);
  if (config.normalize_obs)
    plan.add<float>("rollout_log.obs_raw", "[T+1][M][obs_dim]", (config.num_steps + 1) * log_envs * spec.obs_dim);
  return plan;
}

std::unique_ptr<rl::RolloutLog> open_train_rollout_log(const RolloutLogRequest& request, Engine& engine,
                                                       rl::Trainer& trainer, std::int64_t resume_iteration,
                                                       const FrameSource* frames) {
  using rl::LogCapture;
  using rl::LogDtype;
  const rl::RolloutStorage& rollout = trainer.rollout();
  const ScenarioSpec& spec = engine.spec();
  const std::int64_t steps = rollout.num_steps();
  const std::int64_t log_envs = std::min(request.envs, trainer.config().num_envs);
  const std::vector<std::int64_t> obs_shape{rollout.obs_dim()};
  const bool normalized = trainer.config().normalize_obs;
  std::vector<rl::LogField> fields = {
      {rl::kObsField, LogDtype::Float32, steps, obs_shape,
       normalized ? trainer.keep_raw_observations(log_envs) : rollout.obs(0), LogCapture::AtEnd,
       "the observation acted on, as the environment gave it", normalized},
      rollout.continuous() ? rl::LogField{rl::kActionsField,
                                          LogDtype::Float32,
                                          steps,
                                          {rollout.action_dim()},
                                          rollout.continuous_actions(0),
                                          LogCapture::AtEnd,
                                          "the policy's sample, before the environment clipped it to the action bounds"}
                           : rl::LogField{rl::kActionsField,
                                          LogDtype::Int32,
                                          steps,
                                          {},
                                          rollout.actions(0),
                                          LogCapture::AtEnd,
                                          "the action taken"},
      {rl::kLogprobField,
       LogDtype::Float32,
       steps,
       {},
       rollout.logprob(0),
       LogCapture::AtEnd,
       "log-probability of the action under the policy that took it"},
      {rl::kValueField, LogDtype::Float32, steps, {}, rollout.value(0), LogCapture::AtEnd, "the critic's value of obs"},
      {rl::kRewardField, LogDtype::Float32, steps, {}, rollout.reward(0), LogCapture::AtEnd, "the reward of the step"},
      {rl::kTerminatedField,
       LogDtype::UInt8,
       steps,
       {},
       rollout.terminated(0),
       LogCapture::AtEnd,
       "1 where the episode ended in a terminal state at this step"},
      {rl::kTruncatedField,
       LogDtype::UInt8,
       steps,
       {},
       rollout.truncated(0),
       LogCapture::AtEnd,
       "1 where the episode hit its time limit at this step"},
      {rl::kAdvantageField, LogDtype::Float32, steps, {}, rollout.advantage(0), LogCapture::AtEnd, "GAE advantage"},
      {rl::kReturnField,
       LogDtype::Float32,
       steps,
       {},
       rollout.returns(0),
       LogCapture::AtEnd,
       "the return the critic is fitted to (advantage + value)"},
      {rl::kStartEpisodeReturnField,
       LogDtype::Float32,
       0,
       {},
       engine.episode_returns().data,
       LogCapture::AtBegin,
       "return of each env's running episode when the rollout began"},
      {rl::kStartEpisodeLengthField,
       LogDtype::Int32,
       0,
       {},
       engine.episode_steps().data,
       LogCapture::AtBegin,
       "steps of each env's running episode when the rollout began"},
  };
  if (spec.param_count() > 0)
    fields.push_back({rl::kPhysicsField,
                      spec.param_dtype == DType::Float64 ? LogDtype::Float64 : LogDtype::Float32,
                      0,
                      {spec.param_count()},
                      engine.params().data,
                      LogCapture::AtBegin,
                      "each env's physics parameters when the rollout began"});

  const rl::TrainConfig& config = trainer.config();
  const int side = static_cast<int>(config.frame_size), channels = config.grayscale ? 1 : 3;
  if (frames) {
    const int stack = frames->stack();
    SURGE_CHECK(frames->frame_bytes() == std::int64_t{side} * side * channels,
                "the frame store does not fit the config");
    for (rl::LogField& field : rl::pixel_log_fields(frames->frames(-(stack - 1)), frames->first_flags(-(stack - 1)),
                                                    steps, stack, side, side, channels))
      fields.push_back(std::move(field));
  }
  const PhysicsConfig& physics = engine.physics();
  rl::RolloutLogOptions options;
  options.path = request.path;
  options.device = trainer.device();
  options.num_envs = config.num_envs;
  options.first_env = 0;
  options.env_id_base = engine.first_env();  // under mpirun, env_id holds the global numbers
  options.log_envs = log_envs;
  options.every = request.every;
  options.queue_depth = request.queue_depth;
  options.first_iteration = 1;
  options.resume_iteration = resume_iteration;
  std::vector<std::string> names;
  std::vector<std::int64_t> randomized;
  for (int k = 0; k < spec.param_count(); ++k) {
    names.emplace_back(spec.params[static_cast<std::size_t>(k)].name);
    randomized.push_back(physics.randomized.empty() ? 0 : physics.randomized[static_cast<std::size_t>(k)]);
  }
  options.attributes = {
      {"scenario", spec.name},
      {"gym_id", spec.gym_id},
      {"seed", static_cast<std::int64_t>(config.seed)},
      {"surge_version", std::string(SURGE_VERSION)},
      {"device", trainer.device().str()},
      {"rollout_steps", steps},
      {rl::kPhysicsNamesAttribute, names},
      {"physics_value", std::vector<float>(physics.value.begin(), physics.value.end())},
      {"physics_low", std::vector<float>(physics.low.begin(), physics.low.end())},
      {"physics_high", std::vector<float>(physics.high.begin(), physics.high.end())},
      {"physics_randomized", randomized},
      {rl::kObsNamesAttribute, spec.obs_names},
      {"config", config.to_toml()},
      // 1 where the run normalised observations for the policy (normalize_obs); obs holds the envs' own either way
      {"obs_normalized", static_cast<std::int64_t>(config.normalize_obs)},
      {rl::kObsRawAttribute, std::int64_t{1}},
  };
  if (frames) {
    for (rl::LogAttribute& attribute : rl::pixel_log_attributes(frames->stack(), side, side, channels))
      options.attributes.push_back(std::move(attribute));
  }
  return std::make_unique<rl::RolloutLog>(std::move(options), std::move(fields));
}

// A note for the run's last line, read back from the closed log; never a reason to fail a finished run
// (its final checkpoint is written after this): a log that cannot be read back gets no note.
std::string rollout_log_frames_note(const std::string& path) try {
  const rl::RolloutFile file(path);
  for (const rl::DatasetInfo& dataset : file.datasets())
    if (dataset.name == "frames" && dataset.raw_bytes > 0)
      return ", frames stored in " +
             format_significant(100.0 * static_cast<double>(dataset.stored_bytes) /
                                static_cast<double>(dataset.raw_bytes)) +
             "% of their raw " + format_bytes(static_cast<std::size_t>(dataset.raw_bytes));
  return "";
} catch (const std::exception&) {
  return "";
}

}  // namespace surge::cli
