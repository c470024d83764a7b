#pragma once
// EnvLogic<Scenario>: one environment's step, auto-reset and random actions as single-source code,
// shared by VecEnv's step kernel and the fused random-action rollout (sim/fused_rollout.cuh).
// Include only from .cu files (scenarios/registry.cu instantiates the engines).
//
// A Scenario is a plain struct (see scenarios/cartpole.hpp):
//   State, kStateNames   one float per name, declared together by SURGE_SCENARIO_STATE (sim/scenario.hpp)
//   Params, kParams      one ParamType per entry, declared together by SURGE_SCENARIO_PARAMS
//   Action               std::int32_t (discrete) or a struct { float v[kActionDim]; } (continuous)
//   kName, kGymId, kObsDim, kMaxEpisodeSteps, kActionKind, kNumActions or kActionDim/kActionLow/kActionHigh
//   SURGE_HD static void reset(State&, const Params&, Rng&);
//   SURGE_HD static StepResult step(State&, const Params&, const Action&);
//   SURGE_HD static void observe(const State&, float* obs);
#include <array>
#include <bit>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "sim/engine.hpp"
#include "sim/hd.hpp"
#include "sim/philox.hpp"
#include "sim/scenario.hpp"

namespace surge {

// Physics as the kernels see it, in the scenario's parameter type: what each parameter is, and the range a
// reset draws it from where randomised. It lives in the engine's device buffer `engine.physics`, which the
// kernels read through a pointer, never as an argument, so a captured CUDA graph reads the table as it is
// when it runs. Every field is a T, so the buffer reads as [K][4][params] of the parameter type, one table per
// agent.
template <class T, int kCount>
struct PhysicsTable {
  T value[kCount];
  T low[kCount];
  T high[kCount];
  T randomized[kCount];  // 1: drawn from U(low, high) at every reset; 0: value

  SURGE_HD_INLINE bool any_randomized() const {
    bool any = false;
    for (int j = 0; j < kCount; ++j) any = any || randomized[j] != T(0);
    return any;
  }
};

// A parameter drawn from U(low, high) with one random word: in float32 exactly as Rng::uniform draws;
// in float64 from the same 24 random bits, the multiply and the add rounded separately on the device
// as on the host (see uniform_in).
SURGE_HD_INLINE float draw_param(Rng& rng, float low, float high) { return rng.uniform(low, high); }
SURGE_HD_INLINE double draw_param(Rng& rng, double low, double high) {
  const double unit = static_cast<double>(rng.next_u32() >> 8) * 5.9604644775390625e-8;  // 2^-24
#if defined(__CUDA_ARCH__)
  const double value = __dadd_rn(low, __dmul_rn(high - low, unit));
#else
  const double value = low + (high - low) * unit;
#endif
  return value < high || !(low < high) ? value : nextafter(high, low);
}

// Finished-episode tally of one environment since the last clear.
struct EpisodeTally {
  double episodes;
  double return_sum;
  double length_sum;
};

// Which random streams environment i of an engine of K agents draws from (Engine::num_agents): it belongs to
// agent k = i / N, and draws as environment i - k*N of an engine of N environments with agent k's seed, whose
// environment 0 is global environment first_env (a rank's share of a data-parallel run).
struct AgentStreams {
  const std::uint64_t* seeds;   // [K], on the device
  std::int64_t envs_per_agent;  // N
  std::int64_t first_env;

  SURGE_HD_INLINE std::int64_t agent(std::int64_t i) const { return i / envs_per_agent; }
  SURGE_HD_INLINE std::int64_t stream(std::int64_t i, std::int64_t agent) const {
    return first_env + (i - agent * envs_per_agent);
  }
};

// Words of the random-action stream one action of S uses: one per discrete action, one per dimension.
template <class S>
constexpr int action_words() {
  if constexpr (S::kActionKind == ActionKind::Discrete)
    return 1;
  else
    return S::kActionDim;
}

// A scenario whose step takes the sine and cosine of exactly one angle, step_angle(state), which stays small,
// so that its step may use SmallAngleTrig (sim/lane_math.hpp) wherever SmallAngleTrig::covers that angle; its
// step<Trig>(state, params, action, trig) takes them from `trig`: SmallAngleTrig, or GivenSinCos holding
// SmallAngleTrig's values for that angle, taken beforehand (the CPU rollout takes them in a pass of their
// own). A step that took a second angle would be given the first one's: such a scenario must not meet this
// concept.
template <class S>
concept HasSmallAngleStep = requires(const typename S::State& state) {
  { S::step_angle(state) } -> std::same_as<float>;
};

// A scenario whose reset draws exactly one Philox block (kResetWords = 4) from any source of words with
// Rng's uniform(low, high) lets the CPU rollout reset a tile's lanes side by side (see BlockWords).
template <class S>
concept HasBlockReset = requires {
  requires S::kResetWords == 4;
};

// One reset's four words, drawn ahead, read in order as an Rng at the start of that block would give them.
struct BlockWords {
  std::uint32_t word[4];
  int next = 0;
  SURGE_HD_INLINE std::uint32_t next_u32() { return word[next++]; }
  SURGE_HD_INLINE float uniform(float low, float high) { return uniform_in(next_u32(), low, high); }
};

template <class S>
struct EnvLogic {
  using State = typename S::State;
  using Params = typename S::Params;
  using ParamType = typename S::ParamType;
  using Action = typename S::Action;
  static constexpr int kParamCount = static_cast<int>(S::kParams.size());
  static constexpr int kStateDim = static_cast<int>(S::kStateNames.size());
  using Physics = PhysicsTable<ParamType, kParamCount>;
  static_assert(std::is_same_v<ParamType, float> || std::is_same_v<ParamType, double>,
                "parameters are float or double");
  static_assert(sizeof(Params) == kParamCount * sizeof(ParamType),
                "Params must be exactly one ParamType per kParams entry");
  static_assert(sizeof(State) == kStateDim * sizeof(float), "State must be exactly one float per kStateNames entry");
  static_assert(std::is_trivially_copyable_v<State> && std::is_trivially_copyable_v<Params>);

  // Draws this reset's parameters (randomised ones only, in table order), then the initial state,
  // from env i's reset stream; advances the env's stream offset past what was used.
  SURGE_HD_INLINE static void reset_env(std::uint64_t seed, std::int64_t i, const Physics& physics, State& state,
                                        Params& params, std::uint64_t& rng_offset) {
    Rng rng = reset_rng(seed, i, rng_offset);
    reset_env(physics, state, params, rng);
    rng_offset = rng.offset();
  }
  // The same, drawing from a cursor on env i's reset stream that the caller keeps.
  SURGE_HD_INLINE static void reset_env(const Physics& physics, State& state, Params& params, Rng& rng) {
    ParamType* fields = reinterpret_cast<ParamType*>(&params);
    for (int j = 0; j < kParamCount; ++j)
      fields[j] =
          physics.randomized[j] != ParamType(0) ? draw_param(rng, physics.low[j], physics.high[j]) : physics.value[j];
    S::reset(state, params, rng);
  }
  SURGE_HD_INLINE static Rng reset_rng(std::uint64_t seed, std::int64_t i, std::uint64_t rng_offset) {
    return Rng(seed, rng_subsequence(RngPurpose::EnvReset, static_cast<std::uint64_t>(i)), rng_offset);
  }

  SURGE_HD_INLINE static Action load_action(const std::int32_t* discrete, const float* continuous, std::int64_t i) {
    if constexpr (S::kActionKind == ActionKind::Discrete) {
      (void)continuous;
      return discrete[i];
    } else {
      (void)discrete;
      Action action;
      for (int k = 0; k < S::kActionDim; ++k) action.v[k] = continuous[i * S::kActionDim + k];
      return action;
    }
  }

  static constexpr int kActionWords = action_words<S>();

  // The action that kActionWords random words make: words[0], words[stride], ...
  SURGE_HD_INLINE static Action random_action_from(const std::uint32_t* words, int stride) {
    if constexpr (S::kActionKind == ActionKind::Discrete) {
      (void)stride;
      return static_cast<std::int32_t>(words[0] % static_cast<std::uint32_t>(S::kNumActions));
    } else {
      // Local copies: nvcc does not let device code index a host-side static constexpr std::array.
      constexpr std::array<float, S::kActionDim> low = S::kActionLow, high = S::kActionHigh;
      Action action;
      for (int k = 0; k < S::kActionDim; ++k) action.v[k] = uniform_in(words[k * stride], low[k], high[k]);
      return action;
    }
  }

  SURGE_HD_INLINE static Action random_action(Rng& rng) {
    std::uint32_t words[kActionWords];
    for (int k = 0; k < kActionWords; ++k) words[k] = rng.next_u32();
    return random_action_from(words, 1);
  }

  // The scenario's step with the sine and cosine that Trig takes (LaneTrig: the step every scenario has).
  template <class Trig>
  SURGE_HD_INLINE static StepResult scenario_step(State& state, const Params& params, const Action& action,
                                                  Trig trig = {}) {
    if constexpr (std::is_same_v<Trig, LaneTrig>)
      return S::step(state, params, action);
    else
      return S::template step<Trig>(state, params, action, trig);
  }

  // Steps 1 and 2 of step_env: the scenario's step and the step counter. Returns the reward. (Flags as
  // out-parameters rather than a returned struct: nvcc's host pass keeps such a struct in memory, which
  // stops GCC vectorising the CPU rollout.) SmallAngleTrig as Trig only for a HasSmallAngleStep scenario,
  // where SmallAngleTrig::covers(step_angle(state)); GivenSinCos only there too, holding SmallAngleTrig's sine and
  // cosine of step_angle(state).
  template <class Trig = LaneTrig>
  SURGE_HD_INLINE static float advance(State& state, const Params& params, std::int32_t& episode_step,
                                       float& episode_return, const Action& action, std::uint8_t& terminated,
                                       std::uint8_t& truncated, Trig trig = {}) {
    const StepResult result = scenario_step<Trig>(state, params, action, trig);
    episode_step += 1;
    episode_return += result.reward;
    terminated = result.terminated ? 1 : 0;
    truncated = episode_step >= S::kMaxEpisodeSteps ? 1 : 0;
    return result.reward;
  }

  // Step 3 of step_env, after the final observation: the tally, the new episode, the zeroed counters.
  SURGE_HD_INLINE static void begin_next_episode(std::uint64_t seed, std::int64_t i, const Physics& physics,
                                                 State& state, Params& params, std::int32_t& episode_step,
                                                 float& episode_return, std::uint64_t& rng_offset,
                                                 EpisodeTally& tally) {
    Rng rng = reset_rng(seed, i, rng_offset);
    begin_next_episode(physics, state, params, episode_step, episode_return, rng, tally);
    rng_offset = rng.offset();
  }
  // The same, drawing from a cursor on env i's reset stream that the caller keeps.
  SURGE_HD_INLINE static void begin_next_episode(const Physics& physics, State& state, Params& params,
                                                 std::int32_t& episode_step, float& episode_return, Rng& rng,
                                                 EpisodeTally& tally) {
    tally.episodes += 1.0;
    tally.return_sum += episode_return;
    tally.length_sum += episode_step;
    reset_env(physics, state, params, rng);
    episode_step = 0;
    episode_return = 0.0f;
  }

  // One step of one environment, with same-step auto-reset. This is the only place an episode ends
  // and a new one begins:
  //   1. the scenario steps the state under the action, giving a reward and `terminated`;
  //   2. the step counter advances; `truncated` = counter >= kMaxEpisodeSteps, as Gymnasium's
  //      TimeLimit sets it (so on the last allowed step both flags can be 1);
  //   3. if the episode ended (either flag): the final observation goes to `final_obs` when the
  //      caller gave one, the episode's return and length join the env's tally, the parameters are
  //      redrawn where randomised, the state is reset from the env's stream and the counters zeroed;
  //   4. `obs` receives the observation the policy acts on next: the same episode's, or the first
  //      observation of the new one.
  // Returns the reward and writes the flags; the caller stores them where its layout wants them.
  // The CPU's fused rollout (rollout_lanes) runs these same steps over many environments in two
  // passes: 1, 2 and 4 for all of them, then 3 and 4 again for those whose episode ended.
  SURGE_HD_INLINE static float step_env(std::uint64_t seed, std::int64_t i, const Physics& physics, State& state,
                                        Params& params, std::int32_t& episode_step, float& episode_return,
                                        std::uint64_t& rng_offset, EpisodeTally& tally, const Action& action,
                                        std::uint8_t& terminated_out, std::uint8_t& truncated_out, float* obs_out,
                                        float* final_obs_out) {
    std::uint8_t terminated, truncated;
    const float reward = advance(state, params, episode_step, episode_return, action, terminated, truncated);
    terminated_out = terminated;
    truncated_out = truncated;
    if (terminated || truncated) {
      if (final_obs_out) S::observe(state, final_obs_out);
      begin_next_episode(seed, i, physics, state, params, episode_step, episode_return, rng_offset, tally);
    }
    S::observe(state, obs_out);
    return reward;
  }
};

}  // namespace surge
