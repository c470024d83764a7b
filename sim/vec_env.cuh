#pragma once
// VecEnv<Scenario>: N environments of one scenario stepped together on one device.
// Include only from the .cu file that instantiates the engines (scenarios/registry.cu).
//
// A Scenario is a plain struct (see scenarios/cartpole.hpp):
//   State, Params     POD structs of floats; Params has one float per entry of kParams
//   Action            std::int32_t (discrete) or a struct { float v[kActionDim]; } (continuous)
//   kName, kGymId, kObsDim, kMaxEpisodeSteps, kActionKind, kNumActions or kActionDim/kActionLow/kActionHigh,
//   kStateNames, kParams
//   SURGE_HD static void reset(State&, const Params&, Rng&);
//   SURGE_HD static StepResult step(State&, const Params&, const Action&);
//   SURGE_HD static void observe(const State&, float* obs);
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/hd.hpp"
#include "sim/memory.hpp"
#include "sim/memory_plan.hpp"
#include "sim/parallel.cuh"
#include "sim/philox.hpp"
#include "sim/scenario.hpp"

namespace surge {

// Physics as the kernels see it: fixed-size, passed by value.
template <int kCount>
struct PhysicsTable {
  float value[kCount];
  float low[kCount];
  float high[kCount];
  std::uint32_t randomized_mask;
};

// Finished-episode tally of one environment since the last clear.
struct EpisodeTally {
  double episodes;
  double return_sum;
  double length_sum;
};

// Words of the random-action stream one action of S uses: one per discrete action, one per dimension.
template <class S>
constexpr int action_words() {
  if constexpr (S::kActionKind == ActionKind::Discrete)
    return 1;
  else
    return S::kActionDim;
}

template <class S>
struct EnvLogic {
  using State = typename S::State;
  using Params = typename S::Params;
  using Action = typename S::Action;
  static constexpr int kParamCount = static_cast<int>(S::kParams.size());
  static constexpr int kStateDim = static_cast<int>(S::kStateNames.size());
  static_assert(kParamCount <= 32, "the randomisation mask holds 32 parameters");
  static_assert(sizeof(Params) == kParamCount * sizeof(float), "Params must be exactly one float per kParams entry");
  static_assert(sizeof(State) == kStateDim * sizeof(float), "State must be exactly one float per kStateNames entry");
  static_assert(std::is_trivially_copyable_v<State> && std::is_trivially_copyable_v<Params>);

  // Draws this reset's parameters (randomised ones only, in table order), then the initial state,
  // from env i's reset stream; advances the env's stream offset past what was used.
  SURGE_HD_INLINE static void reset_env(std::uint64_t seed, std::int64_t i, const PhysicsTable<kParamCount>& physics,
                                        State& state, Params& params, std::uint64_t& rng_offset) {
    Rng rng(seed, rng_subsequence(RngPurpose::EnvReset, static_cast<std::uint64_t>(i)), rng_offset);
    float* fields = reinterpret_cast<float*>(&params);
    for (int j = 0; j < kParamCount; ++j)
      fields[j] = (physics.randomized_mask >> j & 1u) ? rng.uniform(physics.low[j], physics.high[j]) : physics.value[j];
    S::reset(state, params, rng);
    rng_offset = rng.offset();
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

  // Steps 1 and 2 of step_env: the scenario's step and the step counter. Returns the reward. (Flags as
  // out-parameters rather than a returned struct: nvcc's host pass keeps such a struct in memory, which
  // stops GCC vectorising the CPU rollout.)
  SURGE_HD_INLINE static float advance(State& state, const Params& params, std::int32_t& episode_step, float& episode_return,
                                       const Action& action, std::uint8_t& terminated, std::uint8_t& truncated) {
    const StepResult result = S::step(state, params, action);
    episode_step += 1;
    episode_return += result.reward;
    terminated = result.terminated ? 1 : 0;
    truncated = episode_step >= S::kMaxEpisodeSteps ? 1 : 0;
    return result.reward;
  }

  // Step 3 of step_env, after the final observation: the tally, the new episode, the zeroed counters.
  SURGE_HD_INLINE static void begin_next_episode(std::uint64_t seed, std::int64_t i, const PhysicsTable<kParamCount>& physics,
                                                 State& state, Params& params, std::int32_t& episode_step,
                                                 float& episode_return, std::uint64_t& rng_offset, EpisodeTally& tally) {
    tally.episodes += 1.0;
    tally.return_sum += episode_return;
    tally.length_sum += episode_step;
    reset_env(seed, i, physics, state, params, rng_offset);
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
  SURGE_HD_INLINE static float step_env(std::uint64_t seed, std::int64_t i, const PhysicsTable<kParamCount>& physics,
                                        State& state, Params& params, std::int32_t& episode_step, float& episode_return,
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

// What the fused random-action rollout reads and writes, for a tile of consecutive environments.
template <class S>
struct RolloutTile {
  using Logic = EnvLogic<S>;
  using State = typename S::State;
  using Params = typename S::Params;
  State* states;
  Params* params;
  std::int32_t* episode_steps;
  float* episode_returns;
  std::uint64_t* rng_offsets;
  std::uint64_t* action_offsets;
  EpisodeTally* tallies;
  float* obs;                  // [T][N][obs_dim]
  float* reward;               // [T][N]
  std::uint8_t* terminated;    // [T][N]
  std::uint8_t* truncated;     // [T][N]
  std::int64_t num_envs, num_steps;
  std::uint64_t seed;
  PhysicsTable<EnvLogic<S>::kParamCount> physics;
};

// The fused rollout as step_env runs it, for up to kLanes environments in lockstep. CUDA runs it with one
// environment per thread (kLanes = 1), which keeps the environment in registers for all T steps.
template <int kLanes, class S>
SURGE_HD_INLINE void rollout_tile(const RolloutTile<S>& tile, std::int64_t first) {
  using Logic = EnvLogic<S>;
  using State = typename S::State;
  using Params = typename S::Params;
  const auto& [states, params, episode_steps, episode_returns, rng_offsets, action_offsets, tallies, obs, reward, terminated,
               truncated, num_envs, num_steps, seed, physics] = tile;
  const int lanes = static_cast<int>(num_envs - first < kLanes ? num_envs - first : kLanes);
  State state[kLanes] = {};
  Params param[kLanes] = {};
  std::int32_t episode_step[kLanes] = {};
  float episode_return[kLanes] = {};
  std::uint64_t rng_offset[kLanes] = {};
  Rng action_rng[kLanes];
  EpisodeTally tally[kLanes] = {};
  for (int l = 0; l < lanes; ++l) {
    const std::int64_t i = first + l;
    state[l] = states[i];
    param[l] = params[i];
    episode_step[l] = episode_steps[i];
    episode_return[l] = episode_returns[i];
    rng_offset[l] = rng_offsets[i];
    action_rng[l] = Rng(seed, rng_subsequence(RngPurpose::Action, static_cast<std::uint64_t>(i)), action_offsets[i]);
    tally[l] = tallies[i];
  }
  for (std::int64_t t = 0; t < num_steps; ++t) {
    for (int l = 0; l < lanes; ++l) {
      const std::int64_t i = first + l;
      const std::int64_t slot = t * num_envs + i;
      const auto action = Logic::random_action(action_rng[l]);
      reward[slot] = Logic::step_env(seed, i, physics, state[l], param[l], episode_step[l], episode_return[l],
                                     rng_offset[l], tally[l], action, terminated[slot], truncated[slot],
                                     obs + slot * S::kObsDim, nullptr);
    }
  }
  for (int l = 0; l < lanes; ++l) {
    const std::int64_t i = first + l;
    states[i] = state[l];
    params[i] = param[l];
    episode_steps[i] = episode_step[l];
    episode_returns[i] = episode_return[l];
    rng_offsets[i] = rng_offset[l];
    action_offsets[i] = action_rng[l].offset();
    tallies[i] = tally[l];
  }
}

// The CPU's fused random-action rollout over a tile of up to kLanes consecutive environments, held
// structure-of-arrays (one lane array per state field and per parameter) so that the compiler
// vectorises across lanes. Each step runs step_env's parts in two passes: advance() and the
// observation over all lanes, branch-free; then, one lane at a time, begin_next_episode() and the new
// first observation for the few lanes whose episode ended. Before every chunk of steps a third pass
// draws the chunk's action words, each lane's Philox blocks side by side. Bit for bit what step_env
// with random_action(Rng&) gives.
template <int kLanes, class S>
inline void rollout_lanes(const RolloutTile<S>& tile, std::int64_t first) {
  using Logic = EnvLogic<S>;
  using State = typename S::State;
  using Params = typename S::Params;
  constexpr int kStateDim = Logic::kStateDim;
  constexpr int kParamCount = Logic::kParamCount;
  constexpr int kWords = Logic::kActionWords;
  constexpr int kChunkSteps = 32;
  constexpr int kChunkWords = kChunkSteps * kWords;
  constexpr int kChunkBlocks = kChunkWords / 4 + 1;  // a lane's words may start anywhere in a block
  // Plain copies, not references into `tile`: the flag stores below are bytes, which may alias anything,
  // and would otherwise make the compiler reload every pointer after each one. The buffers are distinct
  // allocations; __restrict__ spares the vectorised loop a run-time overlap check.
  State* __restrict__ const states = tile.states;
  Params* __restrict__ const params = tile.params;
  std::int32_t* __restrict__ const episode_steps = tile.episode_steps;
  float* __restrict__ const episode_returns = tile.episode_returns;
  std::uint64_t* __restrict__ const rng_offsets = tile.rng_offsets;
  std::uint64_t* __restrict__ const action_offsets = tile.action_offsets;
  EpisodeTally* __restrict__ const tallies = tile.tallies;
  float* __restrict__ const obs = tile.obs;
  float* __restrict__ const reward = tile.reward;
  std::uint8_t* __restrict__ const terminated = tile.terminated;
  std::uint8_t* __restrict__ const truncated = tile.truncated;
  const std::int64_t num_envs = tile.num_envs, num_steps = tile.num_steps;
  const std::uint64_t seed = tile.seed;
  const PhysicsTable<kParamCount> physics = tile.physics;
  const int lanes = static_cast<int>(num_envs - first < kLanes ? num_envs - first : kLanes);

  alignas(64) float state[kStateDim][kLanes];
  alignas(64) float param[kParamCount][kLanes];
  alignas(64) std::int32_t episode_step[kLanes];
  alignas(64) float episode_return[kLanes];
  alignas(64) std::uint64_t action_offset[kLanes];
  alignas(64) std::uint32_t block_words[kChunkBlocks * 4][kLanes];  // [block word][lane] from each lane's first block
  alignas(64) std::uint32_t action_word[kChunkWords][kLanes];       // [word of the chunk][lane]
  alignas(64) std::uint8_t ended[kLanes + 8] = {};  // 1 where the episode ended; + 8: whole groups of eight
  for (int l = 0; l < lanes; ++l) {
    const float* state_fields = reinterpret_cast<const float*>(&states[first + l]);
    const float* param_fields = reinterpret_cast<const float*>(&params[first + l]);
    for (int j = 0; j < kStateDim; ++j) state[j][l] = state_fields[j];
    for (int j = 0; j < kParamCount; ++j) param[j][l] = param_fields[j];
    episode_step[l] = episode_steps[first + l];
    episode_return[l] = episode_returns[first + l];
    action_offset[l] = action_offsets[first + l];
  }

  for (std::int64_t chunk_start = 0; chunk_start < num_steps; chunk_start += kChunkSteps) {
    const int chunk_steps = static_cast<int>(num_steps - chunk_start < kChunkSteps ? num_steps - chunk_start : kChunkSteps);
    for (int b = 0; b < kChunkBlocks; ++b)
      for (int l = 0; l < lanes; ++l) {
        const PhiloxBlock block = philox_block(seed, rng_subsequence(RngPurpose::Action, static_cast<std::uint64_t>(first + l)),
                                               (action_offset[l] >> 2) + static_cast<std::uint64_t>(b));
        for (int m = 0; m < 4; ++m) block_words[b * 4 + m][l] = block.v[m];
      }
    // Shift each lane's words so that word 0 is the one at its offset.
    for (int w = 0; w < kChunkWords; ++w)
      for (int l = 0; l < lanes; ++l) {
        const unsigned skip = static_cast<unsigned>(action_offset[l] & 3u);
        const std::uint32_t w0 = block_words[w][l], w1 = block_words[w + 1][l], w2 = block_words[w + 2][l],
                            w3 = block_words[w + 3][l];
        action_word[w][l] = skip == 0 ? w0 : skip == 1 ? w1 : skip == 2 ? w2 : w3;
      }
    for (int l = 0; l < lanes; ++l) action_offset[l] += static_cast<std::uint64_t>(chunk_steps * kWords);

    for (int c = 0; c < chunk_steps; ++c) {
      const std::int64_t row = (chunk_start + c) * num_envs + first;  // slot of lane 0 in the [T][N] outputs
      for (int l = 0; l < lanes; ++l) {
        // The fields gathered into arrays and bit_cast, rather than written into the structs through a
        // float*, so that nothing here needs the structs in memory.
        std::array<float, kStateDim> state_fields;
        std::array<float, kParamCount> param_fields;
        for (int j = 0; j < kStateDim; ++j) state_fields[j] = state[j][l];
        for (int j = 0; j < kParamCount; ++j) param_fields[j] = param[j][l];
        State s = std::bit_cast<State>(state_fields);
        const Params p = std::bit_cast<Params>(param_fields);
        const auto action = Logic::random_action_from(&action_word[c * kWords][l], kLanes);
        std::uint8_t terminated_flag, truncated_flag;
        reward[row + l] = Logic::advance(s, p, episode_step[l], episode_return[l], action, terminated_flag, truncated_flag);
        state_fields = std::bit_cast<std::array<float, kStateDim>>(s);
        for (int j = 0; j < kStateDim; ++j) state[j][l] = state_fields[j];
        terminated[row + l] = terminated_flag;
        truncated[row + l] = truncated_flag;
        ended[l] = terminated_flag | truncated_flag;
        S::observe(s, obs + (row + l) * S::kObsDim);
      }
      // Eight lanes' flags at a time, as one word: most words are zero, and the set bytes are found
      // without a branch per lane.
      static_assert(std::endian::native == std::endian::little, "byte b of the word is lane group + b");
      for (int group = 0; group < lanes; group += 8) {
        std::uint64_t flags;
        std::memcpy(&flags, &ended[group], sizeof flags);
        for (; flags != 0; flags &= flags - 1) {
          const int l = group + std::countr_zero(flags) / 8;
          const std::int64_t i = first + l;
          State s;
          Params p;
          float* state_fields = reinterpret_cast<float*>(&s);
          float* param_fields = reinterpret_cast<float*>(&p);
          for (int j = 0; j < kStateDim; ++j) state_fields[j] = state[j][l];
          for (int j = 0; j < kParamCount; ++j) param_fields[j] = param[j][l];
          Logic::begin_next_episode(seed, i, physics, s, p, episode_step[l], episode_return[l], rng_offsets[i], tallies[i]);
          for (int j = 0; j < kStateDim; ++j) state[j][l] = state_fields[j];
          for (int j = 0; j < kParamCount; ++j) param[j][l] = param_fields[j];
          S::observe(s, obs + (row + l) * S::kObsDim);
        }
      }
    }
  }

  for (int l = 0; l < lanes; ++l) {
    float* state_fields = reinterpret_cast<float*>(&states[first + l]);
    float* param_fields = reinterpret_cast<float*>(&params[first + l]);
    for (int j = 0; j < kStateDim; ++j) state_fields[j] = state[j][l];
    for (int j = 0; j < kParamCount; ++j) param_fields[j] = param[j][l];
    episode_steps[first + l] = episode_step[l];
    episode_returns[first + l] = episode_return[l];
    action_offsets[first + l] = action_offset[l];
  }
}

// The CPU backend's fused rollout, a tile of kLanes environments per item. Host-only: on CUDA,
// rollout_random launches RolloutTileKernel<S, 1>, and the device pass compiles this to nothing.
template <class S, int kLanes>
struct RolloutLanesKernel {
  RolloutTile<S> tile;
  SURGE_HD_INLINE void operator()(std::int64_t k) const {
#if defined(__CUDA_ARCH__)
    (void)k;
#else
    rollout_lanes<kLanes>(tile, k * kLanes);
#endif
  }
};

// The hot loops as named functors rather than lambdas: nvcc calls an extended __host__ __device__
// lambda through a pointer on the host, which stops the CPU backend from inlining and vectorising it.
template <class S, int kLanes>
struct RolloutTileKernel {
  RolloutTile<S> tile;
  SURGE_HD_INLINE void operator()(std::int64_t k) const { rollout_tile<kLanes>(tile, k * kLanes); }
};

template <class S>
struct StepKernel {
  using Logic = EnvLogic<S>;
  typename S::State* states;
  typename S::Params* params;
  std::int32_t* episode_steps;
  float* episode_returns;
  std::uint64_t* rng_offsets;
  EpisodeTally* tallies;
  PhysicsTable<EnvLogic<S>::kParamCount> physics;
  std::uint64_t seed;
  const std::int32_t* discrete;   // [N] or null
  const float* continuous;        // [N][action_dim] or null
  float* obs;                     // [N][obs_dim]
  float* reward;                  // [N]
  std::uint8_t* terminated;       // [N]
  std::uint8_t* truncated;        // [N]
  float* final_obs;               // [N][obs_dim] or null

  SURGE_HD_INLINE void operator()(std::int64_t i) const {
    const auto action = Logic::load_action(discrete, continuous, i);
    reward[i] = Logic::step_env(seed, i, physics, states[i], params[i], episode_steps[i], episode_returns[i], rng_offsets[i],
                                tallies[i], action, terminated[i], truncated[i], obs + i * S::kObsDim,
                                final_obs ? final_obs + i * S::kObsDim : nullptr);
  }
};

template <class S>
ScenarioSpec make_spec() {
  ScenarioSpec spec;
  spec.name = S::kName;
  spec.gym_id = S::kGymId;
  spec.obs_dim = S::kObsDim;
  spec.state_dim = static_cast<int>(S::kStateNames.size());
  spec.action_kind = S::kActionKind;
  if constexpr (S::kActionKind == ActionKind::Discrete) {
    spec.num_actions = S::kNumActions;
  } else {
    spec.action_dim = S::kActionDim;
    spec.action_low.assign(S::kActionLow.begin(), S::kActionLow.end());
    spec.action_high.assign(S::kActionHigh.begin(), S::kActionHigh.end());
  }
  spec.max_episode_steps = S::kMaxEpisodeSteps;
  for (const char* name : S::kStateNames) spec.state_names.emplace_back(name);
  spec.params.assign(S::kParams.begin(), S::kParams.end());
  return spec;
}

template <class S>
class VecEnv final : public Engine {
 public:
  using Logic = EnvLogic<S>;
  using State = typename S::State;
  using Params = typename S::Params;
  static constexpr int kParamCount = Logic::kParamCount;
  static constexpr int kStateDim = Logic::kStateDim;

  // The buffers the constructor allocates, by name and size, so a run can check they fit first.
  static MemoryPlan memory_plan(Device device, std::int64_t num_envs) {
    MemoryPlan plan(device);
    plan.add("engine.states", "[N]", num_envs, sizeof(State));
    plan.add("engine.params", "[N]", num_envs, sizeof(Params));
    plan.add("engine.episode_steps", "[N]", num_envs, sizeof(std::int32_t));
    plan.add("engine.episode_returns", "[N]", num_envs, sizeof(float));
    plan.add("engine.rng_offsets", "[N]", num_envs, sizeof(std::uint64_t));
    plan.add("engine.action_offsets", "[N]", num_envs, sizeof(std::uint64_t));
    plan.add("engine.tallies", "[N]", num_envs, sizeof(EpisodeTally));
    plan.add("engine.reduce_scratch", "[SMs*4][3]", reduce_scratch_size(device, kEpisodeStatsWidth), sizeof(double));
    return plan;
  }

  VecEnv(Device device, std::int64_t num_envs, std::uint64_t seed, const PhysicsConfig& physics)
      : spec_(make_spec<S>()),
        device_(device),
        num_envs_(num_envs),
        seed_(seed),
        physics_config_(physics),
        states_(device, num_envs),
        params_(device, num_envs),
        episode_steps_(device, num_envs),
        episode_returns_(device, num_envs),
        rng_offsets_(device, num_envs),
        action_offsets_(device, num_envs),
        tallies_(device, num_envs),
        reduce_scratch_(device, reduce_scratch_size(device, kEpisodeStatsWidth)) {
    if (num_envs <= 0) throw InputError("the number of environments must be at least 1, got " + std::to_string(num_envs));
    physics.validate(spec_);
    for (int j = 0; j < kParamCount; ++j) {
      table_.value[j] = physics.value[j];
      table_.low[j] = physics.low[j];
      table_.high[j] = physics.high[j];
    }
    table_.randomized_mask = 0;
    for (int j = 0; j < kParamCount; ++j)
      if (physics.randomized[j]) table_.randomized_mask |= 1u << j;
    Stream stream(device);
    zero_bytes(rng_offsets_.data(), device, rng_offsets_.bytes(), stream);
    zero_bytes(action_offsets_.data(), device, action_offsets_.bytes(), stream);
    reset(stream);
    stream.synchronize();
  }

  const ScenarioSpec& spec() const override { return spec_; }
  Device device() const override { return device_; }
  std::int64_t num_envs() const override { return num_envs_; }
  std::uint64_t seed() const override { return seed_; }
  const PhysicsConfig& physics() const override { return physics_config_; }

  void reset(const Stream& stream) override {
    check_stream(stream);
    const auto states = states_.span();
    const auto params = params_.span();
    const auto steps = episode_steps_.span();
    const auto returns = episode_returns_.span();
    const auto offsets = rng_offsets_.span();
    const auto table = table_;
    const auto seed = seed_;
    parallel_for(stream, num_envs_, [=] SURGE_HD(std::int64_t i) {
      Logic::reset_env(seed, i, table, states[i], params[i], offsets[i]);
      steps[i] = 0;
      returns[i] = 0.0f;
    });
    clear_episode_stats(stream);
  }

  void observe(Span<float> obs, const Stream& stream) const override {
    check_stream(stream);
    check_view(obs, num_envs_ * S::kObsDim, "obs");
    const auto states = states_.cspan();
    float* out = obs.data;
    parallel_for(stream, num_envs_, [=] SURGE_HD(std::int64_t i) { S::observe(states[i], out + i * S::kObsDim); });
  }

  void step(const ActionView& actions, const StepViews& out, const Stream& stream) override {
    check_stream(stream);
    check_actions(actions, num_envs_);
    check_view(out.obs, num_envs_ * S::kObsDim, "obs");
    check_view(out.reward, num_envs_, "reward");
    check_view(out.terminated, num_envs_, "terminated");
    check_view(out.truncated, num_envs_, "truncated");
    if (!out.final_obs.empty()) check_view(out.final_obs, num_envs_ * S::kObsDim, "final_obs");
    const StepKernel<S> kernel{states_.data(),      params_.data(),         episode_steps_.data(), episode_returns_.data(),
                               rng_offsets_.data(), tallies_.data(),        table_,                seed_,
                               actions.discrete.data, actions.continuous.data, out.obs.data,       out.reward.data,
                               out.terminated.data, out.truncated.data,     out.final_obs.data};
    parallel_for(stream, num_envs_, kernel);
  }

  void rollout_random(std::int64_t num_steps, const RolloutViews& out, const Stream& stream) override {
    check_stream(stream);
    SURGE_CHECK(num_steps >= 0, "negative step count");
    const std::int64_t n = num_envs_;
    check_view(out.obs, num_steps * n * S::kObsDim, "obs");
    check_view(out.reward, num_steps * n, "reward");
    check_view(out.terminated, num_steps * n, "terminated");
    check_view(out.truncated, num_steps * n, "truncated");
    const auto states = states_.span();
    const auto params = params_.span();
    const auto steps = episode_steps_.span();
    const auto returns = episode_returns_.span();
    const auto offsets = rng_offsets_.span();
    const auto action_offsets = action_offsets_.span();
    const auto tallies = tallies_.span();
    RolloutTile<S> tile{states.data, params.data, steps.data, returns.data, offsets.data, action_offsets.data, tallies.data,
                     out.obs.data, out.reward.data, out.terminated.data, out.truncated.data, n, num_steps, seed_, table_};
    // Environments stay in registers (GPU) or in a small tile on the stack (CPU) for all T steps; only the
    // rollout outputs touch memory. On the CPU a tile of envs advances in lockstep, vectorised across
    // its lanes, and each step's writes are contiguous.
    if (device_.is_cpu()) {
      constexpr int kLanes = 64;
      parallel_for(stream, (n + kLanes - 1) / kLanes, RolloutLanesKernel<S, kLanes>{tile}, kLanes * num_steps);
    } else {
      parallel_for(stream, n, RolloutTileKernel<S, 1>{tile});
    }
  }

  void random_actions(Span<std::int32_t> discrete, Span<float> continuous, const Stream& stream) override {
    check_stream(stream);
    check_actions(ActionView{discrete, continuous}, num_envs_);
    const auto action_offsets = action_offsets_.span();
    const auto seed = seed_;
    std::int32_t* discrete_out = discrete.data;
    float* continuous_out = continuous.data;
    parallel_for(stream, num_envs_, [=] SURGE_HD(std::int64_t i) {
      Rng rng(seed, rng_subsequence(RngPurpose::Action, static_cast<std::uint64_t>(i)), action_offsets[i]);
      const auto action = Logic::random_action(rng);
      std::int32_t* const discrete_target = discrete_out;  // captured outside the constexpr branches
      float* const continuous_target = continuous_out;
      if constexpr (S::kActionKind == ActionKind::Discrete) {
        (void)continuous_target;
        discrete_target[i] = action;
      } else {
        (void)discrete_target;
        for (int k = 0; k < S::kActionDim; ++k) continuous_target[i * S::kActionDim + k] = action.v[k];
      }
      action_offsets[i] = rng.offset();
    });
  }

  void transition(Span<const float> states_in, const ActionView& actions, Span<float> next_states, Span<float> obs,
                  Span<float> reward, Span<std::uint8_t> terminated, const Stream& stream) const override {
    check_stream(stream);
    check_actions(actions, num_envs_);
    check_view(states_in, num_envs_ * kStateDim, "states");
    check_view(next_states, num_envs_ * kStateDim, "next_states");
    check_view(obs, num_envs_ * S::kObsDim, "obs");
    check_view(reward, num_envs_, "reward");
    check_view(terminated, num_envs_, "terminated");
    const auto params = params_.cspan();
    const State* in = reinterpret_cast<const State*>(states_in.data);
    State* next = reinterpret_cast<State*>(next_states.data);
    const std::int32_t* discrete = actions.discrete.data;
    const float* continuous = actions.continuous.data;
    float* obs_out = obs.data;
    float* reward_out = reward.data;
    std::uint8_t* terminated_out = terminated.data;
    parallel_for(stream, num_envs_, [=] SURGE_HD(std::int64_t i) {
      State state = in[i];
      const StepResult result = S::step(state, params[i], Logic::load_action(discrete, continuous, i));
      next[i] = state;
      S::observe(state, obs_out + i * S::kObsDim);
      reward_out[i] = result.reward;
      terminated_out[i] = result.terminated ? 1 : 0;
    });
  }

  void reduce_episode_stats(Span<double> out, const Stream& stream) override {
    check_stream(stream);
    check_view(out, kEpisodeStatsWidth, "episode stats");
    const auto tallies = tallies_.cspan();
    parallel_reduce<kEpisodeStatsWidth>(
        stream, num_envs_,
        [=] SURGE_HD(std::int64_t i, double* acc) {
          acc[0] += tallies[i].episodes;
          acc[1] += tallies[i].return_sum;
          acc[2] += tallies[i].length_sum;
        },
        reduce_scratch_.data(), out.data);
  }

  void clear_episode_stats(const Stream& stream) override {
    check_stream(stream);
    zero_bytes(tallies_.data(), device_, tallies_.bytes(), stream);
  }

  Span<float> states() override { return {reinterpret_cast<float*>(states_.data()), num_envs_ * kStateDim, device_}; }
  Span<float> params() override { return {reinterpret_cast<float*>(params_.data()), num_envs_ * kParamCount, device_}; }
  Span<std::int32_t> episode_steps() override { return episode_steps_.span(); }
  Span<float> episode_returns() override { return episode_returns_.span(); }
  Span<std::uint64_t> rng_offsets() override { return rng_offsets_.span(); }
  std::size_t device_bytes() const override {
    return states_.bytes() + params_.bytes() + episode_steps_.bytes() + episode_returns_.bytes() + rng_offsets_.bytes() +
           action_offsets_.bytes() + tallies_.bytes() + reduce_scratch_.bytes();
  }

 private:
  void check_stream(const Stream& stream) const {
    SURGE_CHECK(stream.device() == device_, "stream on " + stream.device().str() + " used with an engine on " + device_.str());
  }
  template <class T>
  void check_view(Span<T> view, std::int64_t expected, const char* what) const {
    SURGE_CHECK(view.device == device_, std::string(what) + " view is on " + view.device.str() + ", the engine on " + device_.str());
    SURGE_CHECK(view.size == expected, std::string(what) + " view holds " + std::to_string(view.size) + " elements, expected " +
                                           std::to_string(expected));
  }
  void check_actions(const ActionView& actions, std::int64_t n) const {
    if constexpr (S::kActionKind == ActionKind::Discrete)
      check_view(actions.discrete, n, "discrete actions");
    else
      check_view(actions.continuous, n * S::kActionDim, "continuous actions");
  }

  ScenarioSpec spec_;
  Device device_;
  std::int64_t num_envs_;
  std::uint64_t seed_;
  PhysicsConfig physics_config_;
  PhysicsTable<kParamCount> table_{};
  DeviceBuffer<State> states_;               // [N]
  DeviceBuffer<Params> params_;              // [N] this episode's physics, per env
  DeviceBuffer<std::int32_t> episode_steps_; // [N]
  DeviceBuffer<float> episode_returns_;      // [N]
  DeviceBuffer<std::uint64_t> rng_offsets_;  // [N] words used of each env's reset stream
  DeviceBuffer<std::uint64_t> action_offsets_;  // [N] words used of each env's random-action stream
  DeviceBuffer<EpisodeTally> tallies_;       // [N] finished episodes since the last clear
  DeviceBuffer<double> reduce_scratch_;      // [reduce_scratch_size]
};

}  // namespace surge
