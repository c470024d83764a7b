#pragma once
// The fused random-action rollout behind `surge bench env`: T steps of a tile of environments in one
// launch, the state kept in registers (CUDA) or in structure-of-arrays lane tiles (CPU). Bit for bit
// what EnvLogic::step_env gives step by step.
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "sim/env_logic.cuh"
#include "sim/hd.hpp"
#include "sim/philox_lanes.hpp"
#include "sim/select_bits.hpp"
#include "sim/streaming_store.hpp"

namespace surge {

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
  float* obs;                // [T][N][obs_dim]
  float* reward;             // [T][N]
  std::uint8_t* terminated;  // [T][N]
  std::uint8_t* truncated;   // [T][N]
  std::int64_t num_envs, num_steps;
  std::uint64_t seed;
  const typename EnvLogic<S>::Physics* physics;  // the engine's table, on the device
  bool streaming;  // CPU: each step's outputs leave in streaming stores (a rollout larger than the caches)
};

// The fused rollout as step_env runs it, for up to kLanes environments in lockstep. CUDA runs it with one
// environment per thread (kLanes = 1), which keeps the environment in registers for all T steps.
template <int kLanes, class S>
SURGE_HD_INLINE void rollout_tile(const RolloutTile<S>& tile, std::int64_t first) {
  using Logic = EnvLogic<S>;
  using State = typename S::State;
  using Params = typename S::Params;
  const auto& [states, params, episode_steps, episode_returns, rng_offsets, action_offsets, tallies, obs, reward,
               terminated, truncated, num_envs, num_steps, seed, physics, streaming] = tile;
  (void)streaming;
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
      reward[slot] =
          Logic::step_env(seed, i, *physics, state[l], param[l], episode_step[l], episode_return[l], rng_offset[l],
                          tally[l], action, terminated[slot], truncated[slot], obs + slot * S::kObsDim, nullptr);
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
// structure-of-arrays (one lane array per state field and per parameter, the latter in the scenario's
// parameter type) so that the compiler vectorises across lanes. Each step runs step_env's parts in passes:
// advance() over all lanes, branch-free (with SmallAngleTrig where the scenario has it and every lane's angles
// allow it); then begin_next_episode() for the lanes whose episode ended, over all lanes branch-free where the
// scenario's reset is one Philox block and the tile's physics is the table's (reset_pass), else one lane at a
// time; then the observation of every lane. Before every chunk of steps a pass draws the chunk's action words and
// the first blocks of the lanes' reset streams, each lane's Philox blocks side by side (philox_block_lanes), and
// with block resets the states those blocks reset to; a reset finds its block there, or computes it, one lane at
// a time, when its lane has ended more episodes in the chunk than those blocks cover. Bit for bit what step_env with
// random_action(Rng&) gives. A step's outputs gather in a staging tile and leave it during the next step, in streaming
// stores when tile.streaming asks (and the rows are aligned), else copied.
template <int kLanes, class S>
inline void rollout_lanes(const RolloutTile<S>& tile, std::int64_t first) {
  using Logic = EnvLogic<S>;
  using State = typename S::State;
  using Params = typename S::Params;
  using ParamType = typename Logic::ParamType;
  constexpr int kStateDim = Logic::kStateDim;
  constexpr int kParamCount = Logic::kParamCount;
  constexpr int kWords = Logic::kActionWords;
  constexpr int kChunkSteps = 32;
  constexpr int kChunkWords = kChunkSteps * kWords;
  constexpr int kChunkBlocks = kChunkWords / 4 + 1;  // a lane's words may start anywhere in a block
  constexpr int kResetBlocks = 2;                    // blocks of each lane's reset stream drawn ahead per chunk
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
  const typename Logic::Physics physics = *tile.physics;  // the table, read once per tile
  const int lanes = static_cast<int>(num_envs - first < kLanes ? num_envs - first : kLanes);

  alignas(64) float state[kStateDim][kLanes];
  alignas(64) ParamType param[kParamCount][kLanes];
  alignas(64) std::int32_t episode_step[kLanes];
  alignas(64) float episode_return[kLanes];
  alignas(64) std::uint64_t action_offset[kLanes] = {};
  alignas(64) std::uint64_t reset_offset[kLanes] = {};
  alignas(64) std::uint64_t block_index[kLanes];
  alignas(64) std::uint64_t action_first_block[kLanes];
  alignas(64) std::uint64_t reset_first_block[kLanes];              // the block reset_words starts at
  alignas(64) std::uint32_t reset_words[kResetBlocks * 4][kLanes];  // [block word][lane]
  // With block resets: the state each of those blocks resets its lane to ([block][field][lane]; a block-reset
  // scenario's new state depends on its block's words and the table's parameters alone), and the resets each
  // lane has taken from them in this chunk (which of them the next one takes).
  alignas(64) float fresh_state[kResetBlocks][kStateDim][kLanes];
  alignas(64) std::int32_t resets_taken[kLanes];
  alignas(64) std::uint32_t block_words[kChunkBlocks * 4][kLanes];  // [block word][lane] from each lane's first block
  alignas(64) std::uint32_t action_word[kChunkWords][kLanes];       // [word of the chunk][lane]
  alignas(64) std::uint8_t ended[kLanes + 8] = {};  // 1 where the episode ended; + 8: whole groups of eight
  // A step's rows of the outputs, staged. Two stagings: while one step is computed, the previous step's rows
  // leave from the other, a group of lanes at a time between the groups of a pass of arithmetic, so that the
  // stores (streaming ones drain slowly) overlap it rather than stall in one burst.
  struct Staging {
    alignas(64) float obs[kLanes * S::kObsDim];
    alignas(64) float reward[kLanes];
    alignas(64) std::uint8_t terminated[kLanes];
    alignas(64) std::uint8_t truncated[kLanes];
  };
  alignas(64) Staging staging[2];
  int current = 0;               // the staging this step fills
  std::int64_t staged_row = -1;  // the output row the other one holds; -1 once it has left
  // The flags as the step pass writes them, one 32-bit word per lane: with byte-sized stores in it, GCC
  // would vectorise that pass 64 lanes at a time, more than the registers hold (mask spills).
  alignas(64) std::int32_t terminated_word[kLanes];
  alignas(64) std::int32_t truncated_word[kLanes];
  alignas(64) std::int32_t pending_word[kLanes];  // 1 where an ended episode still needs the one-lane reset
  // SmallAngleTrig's sine and cosine of each lane's step angle.
  alignas(64) float sin_lane[kLanes];
  alignas(64) float cos_lane[kLanes];
  // The lanes' episode tallies, kept here until the rollout ends.
  alignas(64) double tally_episodes[kLanes];
  alignas(64) double tally_return[kLanes];
  alignas(64) double tally_length[kLanes];
  const bool streaming = tile.streaming;
  const auto copy_out = [streaming](void* dst, const void* src, std::size_t bytes) {
    if (streaming)
      copy_streaming(dst, src, bytes);
    else
      std::memcpy(dst, src, bytes);
  };
  // Lanes [from, to) of the staged rows leave (the flag rows, a line or less each, with lane 0's group). Groups
  // of 16 lanes: whole vectors of every output, and aligned ones for full tiles.
  constexpr int kGroupLanes = 16;
  const auto copy_staged = [&](int from, int to) {
    if (staged_row < 0) return;
    const Staging& staged = staging[current ^ 1];
    copy_out(obs + (staged_row + from) * S::kObsDim, staged.obs + from * S::kObsDim,
             sizeof(float) * S::kObsDim * static_cast<std::size_t>(to - from));
    copy_out(reward + staged_row + from, staged.reward + from, sizeof(float) * static_cast<std::size_t>(to - from));
    if (from == 0) {
      copy_out(terminated + staged_row, staged.terminated, static_cast<std::size_t>(lanes));
      copy_out(truncated + staged_row, staged.truncated, static_cast<std::size_t>(lanes));
    }
  };
  const auto copy_all_staged = [&] {
    copy_staged(0, lanes);
    staged_row = -1;
  };
  for (int l = 0; l < lanes; ++l) {
    const float* state_fields = reinterpret_cast<const float*>(&states[first + l]);
    const ParamType* param_fields = reinterpret_cast<const ParamType*>(&params[first + l]);
    for (int j = 0; j < kStateDim; ++j) state[j][l] = state_fields[j];
    for (int j = 0; j < kParamCount; ++j) param[j][l] = param_fields[j];
    episode_step[l] = episode_steps[first + l];
    episode_return[l] = episode_returns[first + l];
    action_offset[l] = action_offsets[first + l];
    reset_offset[l] = rng_offsets[first + l];
    tally_episodes[l] = tallies[first + l].episodes;
    tally_return[l] = tallies[first + l].return_sum;
    tally_length[l] = tallies[first + l].length_sum;
  }
  // Resets a tile at a time: where the scenario's reset is one Philox block, no parameter is randomised and
  // every lane's parameters are the table's (so that a reset leaves them as they are), and every lane's
  // reset stream is at a block's start (so that it stays there, four words a reset).
  bool block_resets = false;
  if constexpr (HasBlockReset<S>) {
    block_resets = !physics.any_randomized();
    for (int l = 0; l < lanes; ++l) {
      block_resets = block_resets && (reset_offset[l] & 3u) == 0;
      for (int j = 0; j < kParamCount; ++j)
        block_resets = block_resets && std::memcmp(&param[j][l], &physics.value[j], sizeof(ParamType)) == 0;
    }
  }
  const Params table_params = std::bit_cast<Params>(physics.value);
  const std::uint64_t first_action_stream = rng_subsequence(RngPurpose::Action, static_cast<std::uint64_t>(first));
  const std::uint64_t first_reset_stream = rng_subsequence(RngPurpose::EnvReset, static_cast<std::uint64_t>(first));
  // Blocks of the lanes' streams, computed side by side: word m of lane l's block at `first_block[l] + b`
  // goes to words[4 b + m][l].
  const auto draw_blocks = [&](std::uint64_t first_stream, const std::uint64_t* first_block, int blocks,
                               std::uint32_t(*words)[kLanes]) {
    for (int b = 0; b < blocks; ++b) {
      for (int l = 0; l < kLanes; ++l) block_index[l] = first_block[l] + static_cast<std::uint64_t>(b);
      philox_block_lanes<kLanes>(seed, first_stream, block_index, words + 4 * b);
    }
  };

  // The fields gathered into arrays and bit_cast, rather than written into the structs through a float*,
  // so that nothing in the step pass needs the structs in memory.
  const auto lane_state = [&](int l) {
    std::array<float, kStateDim> state_fields;
    for (int j = 0; j < kStateDim; ++j) state_fields[j] = state[j][l];
    return std::bit_cast<State>(state_fields);
  };
  // Steps 1, 2 and 4 of step_env for every lane, branch-free: the vectorised pass. lane_trig(l) gives the
  // policy lane l's step takes its sine and cosine with.
  const auto step_pass = [&](const std::uint32_t(*chunk_words)[kLanes], int c, auto lane_trig) {
    using Trig = decltype(lane_trig(0));
    for (int l = 0; l < lanes; ++l) {
      State s = lane_state(l);
      std::array<ParamType, kParamCount> param_fields;
      for (int j = 0; j < kParamCount; ++j) param_fields[j] = param[j][l];
      const Params p = std::bit_cast<Params>(param_fields);
      const auto action = Logic::random_action_from(&chunk_words[c * kWords][l], kLanes);
      std::uint8_t terminated_flag, truncated_flag;
      staging[current].reward[l] = Logic::template advance<Trig>(s, p, episode_step[l], episode_return[l], action,
                                                                 terminated_flag, truncated_flag, lane_trig(l));
      const auto state_fields = std::bit_cast<std::array<float, kStateDim>>(s);
      for (int j = 0; j < kStateDim; ++j) state[j][l] = state_fields[j];
      terminated_word[l] = terminated_flag;
      truncated_word[l] = truncated_flag;
    }
  };
  // begin_next_episode for every lane whose episode ended and whose reset block is among those drawn ahead,
  // branch-free: the tally, the new state from the block's words, the zeroed counters. The rest (a lane that
  // ended more episodes in the chunk than those blocks cover) are left pending for the one-lane path.
  const auto reset_lane = [&](int l) {
    if constexpr (HasBlockReset<S>) {
      static_assert(kResetBlocks == 2, "the new state below is block 0's or block 1's");
      const bool ended_now = (terminated_word[l] | truncated_word[l]) != 0;
      // The block the lane's reset stream is at: resets_taken[l] blocks past the chunk's first (a lane that went
      // on to the one-lane path, at block kResetBlocks, stays there).
      const std::int32_t block = resets_taken[l];
      const bool take = ended_now && block < kResetBlocks;
      for (int j = 0; j < kStateDim; ++j)
        state[j][l] =
            select_bits(take, select_bits(block == 0, fresh_state[0][j][l], fresh_state[1][j][l]), state[j][l]);
      tally_episodes[l] = select_bits(take, tally_episodes[l] + 1.0, tally_episodes[l]);
      tally_return[l] = select_bits(take, tally_return[l] + static_cast<double>(episode_return[l]), tally_return[l]);
      tally_length[l] = select_bits(take, tally_length[l] + static_cast<double>(episode_step[l]), tally_length[l]);
      episode_step[l] = select_bits(take, 0, episode_step[l]);
      episode_return[l] = select_bits(take, 0.0f, episode_return[l]);
      reset_offset[l] += select_bits(take, std::uint64_t{4}, std::uint64_t{0});
      resets_taken[l] += take ? 1 : 0;
      pending_word[l] = ended_now && !take ? 1 : 0;
    }
  };
  // reset_lane over all lanes, a group of eight at a time; a group where no episode ended (about two
  // thirds of them in a CartPole rollout of random actions) is left as it is, which is what the pass
  // would have done to it. The groups to visit come as the bits of one word, from the flag bytes eight at a
  // time: a branch on each group would be mispredicted about every other time.
  const auto reset_pass = [&] {
    if constexpr (!HasBlockReset<S>) return;
    constexpr int kGroup = 8;
    static_assert(kLanes / kGroup <= 64, "a bit for each group");
    const int full_groups = lanes / kGroup;
    std::uint64_t groups_ended = 0;
    for (int g = 0; g < full_groups; ++g) {
      std::uint64_t terminated_bytes, truncated_bytes;
      std::memcpy(&terminated_bytes, &staging[current].terminated[g * kGroup], sizeof terminated_bytes);
      std::memcpy(&truncated_bytes, &staging[current].truncated[g * kGroup], sizeof truncated_bytes);
      groups_ended |= static_cast<std::uint64_t>((terminated_bytes | truncated_bytes) != 0 ? 1 : 0) << g;
    }
    for (int l = 0; l < full_groups * kGroup; ++l) pending_word[l] = 0;
    for (; groups_ended != 0; groups_ended &= groups_ended - 1) {
      const int group = std::countr_zero(groups_ended) * kGroup;
      for (int l = group; l < group + kGroup; ++l) reset_lane(l);
    }
    for (int l = full_groups * kGroup; l < lanes; ++l) reset_lane(l);  // a partial tile's last lanes
  };

  for (std::int64_t chunk_start = 0; chunk_start < num_steps; chunk_start += kChunkSteps) {
    const int chunk_steps =
        static_cast<int>(num_steps - chunk_start < kChunkSteps ? num_steps - chunk_start : kChunkSteps);
    // Where every lane's offset sits at a block's start (always, when each call's steps are a multiple of
    // four), the step pass takes the words straight from the blocks, and the chunk needs a block less.
    int aligned = 1;
    for (int l = 0; l < lanes; ++l) aligned &= (action_offset[l] & 3u) == 0 ? 1 : 0;
    for (int l = 0; l < kLanes; ++l) action_first_block[l] = action_offset[l] >> 2;
    draw_blocks(first_action_stream, action_first_block, aligned ? kChunkWords / 4 : kChunkBlocks, block_words);
    // The next resets' words, most of them: the few lanes that end more episodes in this chunk than
    // kResetBlocks covers draw the rest one at a time.
    for (int l = 0; l < kLanes; ++l) reset_first_block[l] = reset_offset[l] >> 2;
    draw_blocks(first_reset_stream, reset_first_block, kResetBlocks, reset_words);
    if constexpr (HasBlockReset<S>) {
      if (block_resets) {
        // Each block's new state, once for the chunk: the reset pass selects among them.
        for (int b = 0; b < kResetBlocks; ++b)
          for (int l = 0; l < kLanes; ++l) {
            BlockWords words;
            for (int m = 0; m < 4; ++m) words.word[m] = reset_words[4 * b + m][l];
            State fresh;
            S::reset(fresh, table_params, words);
            const auto fresh_fields = std::bit_cast<std::array<float, kStateDim>>(fresh);
            for (int j = 0; j < kStateDim; ++j) fresh_state[b][j][l] = fresh_fields[j];
          }
        for (int l = 0; l < kLanes; ++l) resets_taken[l] = 0;
      }
    }
    // Else each lane's words are shifted so that word 0 is the one at its offset.
    const std::uint32_t(*chunk_words)[kLanes] = block_words;
    if (aligned == 0) {
      for (int w = 0; w < kChunkWords; ++w)
        for (int l = 0; l < lanes; ++l) {
          const unsigned skip = static_cast<unsigned>(action_offset[l] & 3u);
          const std::uint32_t w0 = block_words[w][l], w1 = block_words[w + 1][l], w2 = block_words[w + 2][l],
                              w3 = block_words[w + 3][l];
          action_word[w][l] = skip == 0 ? w0 : skip == 1 ? w1 : skip == 2 ? w2 : w3;
        }
      chunk_words = action_word;
    }
    for (int l = 0; l < lanes; ++l) action_offset[l] += static_cast<std::uint64_t>(chunk_steps * kWords);

    for (int c = 0; c < chunk_steps; ++c) {
      const std::int64_t row = (chunk_start + c) * num_envs + first;  // slot of lane 0 in the [T][N] outputs
      if constexpr (HasSmallAngleStep<S>) {
        // SmallAngleTrig when every lane allows it: the same bits as LaneTrig, less work. Its sines and
        // cosines in a pass of their own, handed to the steps: two shorter chains of dependent instructions a
        // lane instead of one long one, so that the core overlaps more lanes; the previous step's rows leave
        // between its groups of lanes.
        int small_angles = 1;
        for (int l = 0; l < lanes; ++l) small_angles &= SmallAngleTrig::covers(S::step_angle(lane_state(l))) ? 1 : 0;
        if (small_angles != 0) {
          for (int group = 0; group < lanes; group += kGroupLanes) {
            const int end = group + kGroupLanes < lanes ? group + kGroupLanes : lanes;
            for (int l = group; l < end; ++l)
              SmallAngleTrig::sincos(S::step_angle(lane_state(l)), sin_lane[l], cos_lane[l]);
            copy_staged(group, end);
          }
          staged_row = -1;
          step_pass(chunk_words, c, [&](int l) {
            return GivenSinCos{S::step_angle(lane_state(l)), sin_lane[l], cos_lane[l]};
          });
        } else {
          copy_all_staged();
          step_pass(chunk_words, c, [](int) { return LaneTrig{}; });
        }
      } else {
        copy_all_staged();
        step_pass(chunk_words, c, [](int) { return LaneTrig{}; });
      }
      for (int l = 0; l < lanes; ++l) {
        staging[current].terminated[l] = static_cast<std::uint8_t>(terminated_word[l]);
        staging[current].truncated[l] = static_cast<std::uint8_t>(truncated_word[l]);
      }
      if (block_resets)
        reset_pass();
      else
        for (int l = 0; l < lanes; ++l) pending_word[l] = terminated_word[l] | truncated_word[l];
      for (int l = 0; l < lanes; ++l) ended[l] = static_cast<std::uint8_t>(pending_word[l]);
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
          ParamType* param_fields = reinterpret_cast<ParamType*>(&p);
          for (int j = 0; j < kStateDim; ++j) state_fields[j] = state[j][l];
          for (int j = 0; j < kParamCount; ++j) param_fields[j] = param[j][l];
          const std::uint64_t block = (reset_offset[l] >> 2) - reset_first_block[l];
          Rng rng = block < kResetBlocks
                        ? Rng(seed, first_reset_stream + static_cast<std::uint64_t>(l), reset_offset[l],
                              PhiloxBlock{{reset_words[4 * block][l], reset_words[4 * block + 1][l],
                                           reset_words[4 * block + 2][l], reset_words[4 * block + 3][l]}})
                        : Logic::reset_rng(seed, i, reset_offset[l]);
          EpisodeTally tally{tally_episodes[l], tally_return[l], tally_length[l]};
          Logic::begin_next_episode(physics, s, p, episode_step[l], episode_return[l], rng, tally);
          tally_episodes[l] = tally.episodes;
          tally_return[l] = tally.return_sum;
          tally_length[l] = tally.length_sum;
          reset_offset[l] = rng.offset();
          for (int j = 0; j < kStateDim; ++j) state[j][l] = state_fields[j];
          for (int j = 0; j < kParamCount; ++j) param[j][l] = param_fields[j];
        }
      }
      // The observation the policy acts on next: this step's, or the new episode's first.
      for (int l = 0; l < lanes; ++l) S::observe(lane_state(l), staging[current].obs + l * S::kObsDim);
      staged_row = row;  // leaves during the next step
      current ^= 1;
    }
  }
  copy_all_staged();
  if (streaming) streaming_fence();

  for (int l = 0; l < lanes; ++l) {
    float* state_fields = reinterpret_cast<float*>(&states[first + l]);
    ParamType* param_fields = reinterpret_cast<ParamType*>(&params[first + l]);
    for (int j = 0; j < kStateDim; ++j) state_fields[j] = state[j][l];
    for (int j = 0; j < kParamCount; ++j) param_fields[j] = param[j][l];
    episode_steps[first + l] = episode_step[l];
    episode_returns[first + l] = episode_return[l];
    action_offsets[first + l] = action_offset[l];
    rng_offsets[first + l] = reset_offset[l];
    tallies[first + l] = EpisodeTally{tally_episodes[l], tally_return[l], tally_length[l]};
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

}  // namespace surge
