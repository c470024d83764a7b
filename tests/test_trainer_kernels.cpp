// The trainer's minibatch gather (rl/trainer_kernels.hpp): row j of minibatch m is batch sample
// permutation(m * B + j) of shuffle number iteration * epochs + epoch, taken from Permutation itself one
// index at a time, for batch sizes whose Feistel domains walk little or much, and minibatches that end
// in a partial tile of the gather.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "rl/shuffle.hpp"
#include "rl/trainer_kernels.hpp"

using namespace surge::rl;

TEST_CASE("gather_minibatch takes the rows the permutation names", "[trainer_kernels]") {
  surge::Stream stream(surge::Device::cpu());
  const int obs_dim = 3;
  // batch, minibatch size: 16-row tiles, a partial last tile, half_bits 4 to 9 (domains up to 4 n).
  for (const auto& [batch, size] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {8, 4}, {37, 37}, {512, 128}, {600, 150}, {4100, 1025}, {70000, 17500}}) {
    std::vector<float> obs(batch * obs_dim), logprob(batch), value(batch), advantage(batch), returns(batch);
    std::vector<std::int32_t> actions(batch);
    for (std::int64_t s = 0; s < batch; ++s) {
      for (int k = 0; k < obs_dim; ++k) obs[s * obs_dim + k] = static_cast<float>(s * obs_dim + k);
      actions[s] = static_cast<std::int32_t>(s);
      logprob[s] = static_cast<float>(-s);
      value[s] = static_cast<float>(2 * s);
      advantage[s] = static_cast<float>(3 * s);
      returns[s] = static_cast<float>(4 * s);
    }
    const BatchView in{obs.data(),     actions.data(), nullptr, logprob.data(), value.data(), advantage.data(),
                       returns.data(), obs_dim,        0};
    std::vector<float> mb_obs(size * obs_dim), fields(4 * size);
    std::vector<std::int32_t> mb_actions(size);
    const MinibatchBuffers out{mb_obs.data(),           mb_actions.data(),    nullptr,
                               fields.data(),           fields.data() + size, fields.data() + 2 * size,
                               fields.data() + 3 * size};
    const Permutation base = Permutation::make(batch, 11, 0);
    const TrainState state{5, 0, 0, 0};
    const std::int64_t epochs = 3, epoch = 2;
    const Permutation shuffle = base.with_shuffle(static_cast<std::uint64_t>(state.iteration * epochs + epoch));
    for (const std::int64_t m : {std::int64_t{0}, batch / size - 1}) {
      gather_minibatch(stream, base, &state, epochs, epoch, m, size, in, out);
      stream.synchronize();
      std::int64_t wrong = 0;
      for (std::int64_t j = 0; j < size; ++j) {
        const std::int64_t s = shuffle(m * size + j);
        bool same = mb_actions[j] == s && fields[j] == logprob[s] && fields[size + j] == value[s] &&
                    fields[2 * size + j] == advantage[s] && fields[3 * size + j] == returns[s];
        for (int k = 0; k < obs_dim; ++k) same = same && mb_obs[j * obs_dim + k] == obs[s * obs_dim + k];
        wrong += same ? 0 : 1;
      }
      INFO("batch " << batch << ", minibatch " << m << " of size " << size);
      CHECK(wrong == 0);
    }
  }
}
