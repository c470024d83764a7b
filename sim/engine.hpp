#pragma once
// The type-erased face of VecEnv<Scenario>: what rl/, interop/ and tools/ see. No concrete scenario
// is named here, and nothing in this header needs nvcc.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/buffer_table.hpp"
#include "sim/device.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "sim/stream.hpp"
#include "sim/tensor_view.hpp"

namespace surge {

enum class ActionKind : std::uint8_t { Discrete, Continuous };

// One physics constant of a scenario: its name, default and the smallest value that makes sense, both
// exactly as the scenario's parameter type holds them.
struct ParamInfo {
  const char* name;
  double default_value;
  double min_value;  // values below this are rejected as bad input (a negative mass, say)
};

// Everything about a scenario that can be known without an engine.
struct ScenarioSpec {
  std::string name;    // "cartpole"
  std::string gym_id;  // "CartPole-v1"
  int obs_dim = 0;
  int state_dim = 0;
  ActionKind action_kind = ActionKind::Discrete;
  int num_actions = 0;                         // discrete: actions are 0 .. num_actions-1
  int action_dim = 0;                          // continuous: actions are float[action_dim]
  std::vector<float> action_low, action_high;  // continuous bounds
  int max_episode_steps = 0;
  double reward_threshold = 0.0;  // a mean return that counts as solved (Gymnasium's, or ours where it has none)
  std::vector<std::string> state_names;
  std::vector<std::string>
      obs_names;  // one per observation component (the state's names where the observation is the state)
  std::vector<ParamInfo> params;
  DType param_dtype = DType::Float32;  // what the parameters are held in: Float32, or Float64 where the scenario says

  int param_count() const { return static_cast<int>(params.size()); }
  int param_index(const std::string& name) const;  // -1 if unknown
  // A parameter value as the shortest text that reads back to it in param_dtype: 0.2, not the float32
  // 0.2's 0.20000000298023224.
  std::string param_text(double value) const;
  // `value` as the scenario holds it: rounded to float32 unless the parameters are float64.
  double round_param(double value) const;
};

// Physics for every environment: a base value per parameter, and optionally a uniform range
// [low, high] drawn afresh by each environment at each reset from its own Philox stream. Values are
// doubles holding what the scenario's parameter type holds (ScenarioSpec::round_param).
struct PhysicsConfig {
  std::vector<double> value;
  std::vector<double> low, high;
  std::vector<std::uint8_t> randomized;

  static PhysicsConfig defaults(const ScenarioSpec& spec);
  // Throws InputError naming the parameter when a value or range is out of physical sense.
  void validate(const ScenarioSpec& spec) const;
  bool any_randomized() const;
  std::string describe(const ScenarioSpec& spec) const;  // "masspole ~ U(0.05, 0.2)", or "none"
};

// Views of an engine of K agents of N environments each (Engine::num_agents) at a per-agent distance: with
// agent_stride_bytes = 0 every view holds the rows of all K*N environments one after another. With a stride
// S > 0 each view holds agent 0's part ([N][...], N = envs_per_agent()) and agent k's part is at data + k*S
// bytes (the same S for every view of the struct), as in K arenas at a fixed distance (BufferArena replicas).
// S must be at least the bytes of each view's part and a multiple of its element's size.
struct ActionView {
  Span<const std::int32_t> discrete;  // [N] for discrete scenarios
  Span<const float> continuous;       // [N][action_dim] for continuous scenarios
  std::int64_t agent_stride_bytes = 0;
};

// Where step() writes. All on the engine's device; the caller owns them (they are rollout slices).
struct StepViews {
  Span<float> obs;                // [N][obs_dim] next observation; the first of a new episode after an end
  Span<float> reward;             // [N]
  Span<std::uint8_t> terminated;  // [N]
  Span<std::uint8_t> truncated;   // [N]
  Span<float> final_obs;          // [N][obs_dim] or empty; written only where an episode ended
  std::int64_t agent_stride_bytes = 0;
};

// Where rollout_random() writes: T consecutive steps laid out as a rollout would be.
struct RolloutViews {
  Span<float> obs;                // [T][N][obs_dim]
  Span<float> reward;             // [T][N]
  Span<std::uint8_t> terminated;  // [T][N]
  Span<std::uint8_t> truncated;   // [T][N]
};

// The rollout size (all four views together) from which the CPU's rollout_random() writes in streaming
// stores: beyond the last-level cache of the machines Surge runs on, where ordinary stores would read
// every line in before writing it. Smaller rollouts stay cached for whoever reads them next.
inline constexpr std::int64_t kStreamingRolloutBytes = std::int64_t(32) << 20;

// One agent of an engine that holds several (Engine::num_agents): the seed its environments' random streams
// are keyed by and the physics its resets draw from, as an engine of its own would have them.
struct EngineAgent {
  std::uint64_t seed = 0;
  PhysicsConfig physics;
};

// Statistics of the episodes that finished since the last clear.
struct EpisodeStats {
  double episodes = 0;
  double return_sum = 0;
  double length_sum = 0;
  double mean_return() const { return episodes > 0 ? return_sum / episodes : 0.0; }
  double mean_length() const { return episodes > 0 ? length_sum / episodes : 0.0; }
};
inline constexpr int kEpisodeStatsWidth = 3;

class Engine {
 public:
  virtual ~Engine() = default;

  virtual const ScenarioSpec& spec() const = 0;
  virtual Device device() const = 0;
  // Every environment of every agent: num_agents() * envs_per_agent().
  virtual std::int64_t num_envs() const = 0;
  // An engine holds K agents of N environments each (one unless make_engine was given agents). Agent k owns
  // environments k*N .. k*N+N-1, and its environment k*N+i steps, resets and draws exactly as environment i of
  // an engine of N environments with agent k's seed and physics: the same random streams, the same bits.
  virtual std::int64_t num_agents() const { return 1; }
  std::int64_t envs_per_agent() const { return num_envs() / num_agents(); }
  virtual std::uint64_t agent_seed(std::int64_t agent) const = 0;
  virtual const PhysicsConfig& agent_physics(std::int64_t agent) const = 0;
  // The global index of environment 0 (a rank's share of a data-parallel run starts there); its
  // random streams are those of environments first_env() .. first_env() + N - 1.
  virtual std::int64_t first_env() const { return 0; }
  // Agent 0's seed and physics (the engine's, with one agent).
  std::uint64_t seed() const { return agent_seed(0); }
  const PhysicsConfig& physics() const { return agent_physics(0); }
  // Rewrites the physics every later reset draws from (the device buffer engine.physics, which the kernels
  // read, so a captured CUDA graph picks it up too), ordered on `stream` after the work already enqueued;
  // the parameters of episodes under way stay as they were drawn. Between steps or iterations, not inside
  // a graph's capture. Throws InputError, changing nothing, when `physics` makes no sense for the scenario.
  // With several agents, every agent's; set_agent_physics rewrites agent k's rows of engine.physics only.
  virtual void set_physics(const PhysicsConfig& physics, const Stream& stream) = 0;
  virtual void set_agent_physics(std::int64_t agent, const PhysicsConfig& physics, const Stream& stream) = 0;

  // Starts every environment afresh: counters cleared, parameters redrawn where randomised.
  virtual void reset(const Stream& stream) = 0;
  // Writes the current observation of every environment, [N][obs_dim].
  virtual void observe(Span<float> obs, const Stream& stream) const = 0;
  // The same into views at a per-agent distance (ActionView): agent 0's [N][obs_dim] in `agent0_obs`, agent
  // k's at its data + k * agent_stride_bytes bytes; one launch. A stride of 0 is observe().
  virtual void observe_agents(Span<float> agent0_obs, std::int64_t agent_stride_bytes, const Stream& stream) const = 0;
  // One step of every environment with same-step auto-reset (semantics at EnvLogic::step_env in sim/env_logic.cuh).
  // Actions are read and outputs written at each agent's place when the views have a per-agent stride.
  // Enqueued on `stream`; never waits for the device.
  virtual void step(const ActionView& actions, const StepViews& out, const Stream& stream) = 0;
  // step() for the environments of agents [first, first + count) only, the views as step() takes them (agent
  // 0's parts, or every environment's rows): each of those environments steps exactly as in step(), the
  // others and their outputs are left untouched. Host threads may step disjoint ranges at once on the CPU.
  virtual void step_agents(std::int64_t first, std::int64_t count, const ActionView& actions, const StepViews& out,
                           const Stream& stream) = 0;
  // `steps` steps of every environment with uniform random actions drawn on the device, fused in
  // one launch: the inner loop of `surge bench env`.
  virtual void rollout_random(std::int64_t steps, const RolloutViews& out, const Stream& stream) = 0;
  // Uniform random actions for every environment, drawn on the device from each env's action stream
  // (discrete: an index in [0, num_actions); continuous: U(low, high) per dimension).
  virtual void random_actions(Span<std::int32_t> discrete, Span<float> continuous, const Stream& stream) = 0;
  // A pure batched transition from given states ([N][state_dim]) under the engine's parameters:
  // no auto-reset, no counters touched. What `surge step` runs.
  virtual void transition(Span<const float> states, const ActionView& actions, Span<float> next_states, Span<float> obs,
                          Span<float> reward, Span<std::uint8_t> terminated, const Stream& stream) const = 0;

  // Reduces the finished-episode statistics on the device into out[K][kEpisodeStatsWidth] (episodes, return
  // sum, length sum per agent), a device view; does not wait. Agent k's row has the bits an engine of its N
  // environments alone reduces to.
  virtual void reduce_episode_stats(Span<double> out, const Stream& stream) = 0;
  virtual void clear_episode_stats(const Stream& stream) = 0;
  // Host conveniences for tools and tests: reduce, copy back and wait. episode_stats() is for an engine of
  // one agent; agent_episode_stats() gives one entry per agent.
  EpisodeStats episode_stats(const Stream& stream);
  std::vector<EpisodeStats> agent_episode_stats(const Stream& stream);

  // Raw views of the engine's state, for checkpoints, tests and `surge step`.
  virtual Span<float> states() = 0;                // [N][state_dim]
  virtual TensorView params() = 0;                 // [N][param_count] of spec().param_dtype
  virtual Span<std::int32_t> episode_steps() = 0;  // [N] steps taken in the current episode
  virtual Span<float> episode_returns() = 0;       // [N] return accumulated in the current episode
  virtual Span<std::uint64_t> rng_offsets() = 0;   // [N] words consumed from each env's reset stream
  virtual std::size_t device_bytes() const = 0;    // memory the engine holds on its device
  // Every buffer, as its table declares them: what a resumable checkpoint saves of the environments
  // (kSaved) among them.
  virtual const BufferArena& buffers() const = 0;

  // Agent k's share of a view of every environment ([K*N][width], such as the observations a step wrote or
  // states()): its rows k*N .. k*N+N-1, [N][width].
  template <class T>
  Span<T> agent_rows(Span<T> all, std::int64_t agent) const {
    SURGE_CHECK(agent >= 0 && agent < num_agents(),
                "agent " + std::to_string(agent) + " of an engine of " + std::to_string(num_agents()) + " agents");
    SURGE_CHECK(all.size % num_envs() == 0, "a view of " + std::to_string(all.size) +
                                                " elements is not rows of the engine's " + std::to_string(num_envs()) +
                                                " environments");
    const std::int64_t rows = all.size / num_envs() * envs_per_agent();
    return all.slice(agent * rows, rows);
  }
  Span<float> agent_states(std::int64_t agent) { return agent_rows(states(), agent); }  // [N][state_dim]
  // Agent k's rows of the entries a resumable checkpoint keeps (kSaved), named and shaped as those of an engine
  // of its N environments alone: what save_buffers(buffers()) gives that engine. Waits for the stream.
  std::vector<SavedBuffer> save_agent_state(std::int64_t agent, const Stream& stream) const;
  // Puts such entries back into agent k's rows; throws InputError (saying `what`) where one is missing or
  // sized for another run, before anything is written.
  void restore_agent_state(std::int64_t agent, const std::vector<SavedBuffer>& saved, const std::string& what,
                           const Stream& stream);
  TensorView agent_params(std::int64_t agent);  // [N][param_count]
};

// Every environment's parameters, [N][param_count], on the host and widened to double (exactly), or
// written back from such values in the engine's own type; throws InputError when the count differs.
std::vector<double> params_to_host(Engine& engine, const Stream& stream);
void params_from_host(Engine& engine, const std::vector<double>& values, const Stream& stream);

// Bytes one environment writes per step into rollout buffers: obs, reward and the two flags.
inline std::size_t rollout_bytes_per_env_step(const ScenarioSpec& spec) {
  return static_cast<std::size_t>(spec.obs_dim) * sizeof(float) + sizeof(float) + 2 * sizeof(std::uint8_t);
}

}  // namespace surge
