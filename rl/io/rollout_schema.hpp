#pragma once
// Names in the rollout log's schema (docs/hdf5-schema.md), shared by its writer, its reader and
// the trainer that feeds it.

namespace surge::rl {

// File attributes the log itself writes.
inline constexpr const char* kSchemaAttribute = "schema";  // marks the file as ours
inline constexpr const char* kSchemaName = "surge-rollout-log";
inline constexpr const char* kSchemaVersionAttribute = "schema_version";
inline constexpr const char* kDroppedAttribute = "dropped_iterations";
inline constexpr const char* kFirstIterationAttribute = "first_iteration";
// Written by the trainer: the names of the observation's and the physics parameters' components
// (what `surge h5 export` names its columns), and whether `obs` holds the environments' own
// observations (1) or normalised ones (0, logs written before raw observations were logged).
inline constexpr const char* kObsNamesAttribute = "obs_names";
inline constexpr const char* kPhysicsNamesAttribute = "physics_names";
inline constexpr const char* kObsRawAttribute = "obs_raw";

// Index datasets: [I] per logged iteration, and [M] for the logged environments.
inline constexpr const char* kIterationDataset = "iteration";
inline constexpr const char* kGlobalStepDataset = "global_step";
inline constexpr const char* kEnvIdDataset = "env_id";

// Fields, [I][T][M](item) per step.
inline constexpr const char* kObsField = "obs";
inline constexpr const char* kActionsField = "actions";
inline constexpr const char* kRewardField = "reward";
inline constexpr const char* kTerminatedField = "terminated";
inline constexpr const char* kTruncatedField = "truncated";
inline constexpr const char* kLogprobField = "logprob";
inline constexpr const char* kValueField = "value";
inline constexpr const char* kAdvantageField = "advantage";
inline constexpr const char* kReturnField = "return";
inline constexpr const char* kFinalObsField = "final_obs";
// Fields, [I][M](item) per env, taken before the rollout: the return and length that each env's
// running episode had reached, and the physics parameters it runs under.
inline constexpr const char* kStartEpisodeReturnField = "start_episode_return";
inline constexpr const char* kStartEpisodeLengthField = "start_episode_length";
inline constexpr const char* kPhysicsField = "physics";

}  // namespace surge::rl
