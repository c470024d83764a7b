// The checkpoint reader (rl/io/checkpoint.hpp) of `surge eval` and `surge train --resume`: any bytes as
// an HDF5 file. A checkpoint it accepts must hold as many parameters as its network has.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "rl/actor_critic.hpp"
#include "rl/io/checkpoint.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = surge::fuzz::write_input(data, size, ".h5");
  surge::fuzz::expect_input_error_only([&] {
    const surge::rl::Checkpoint checkpoint = surge::rl::read_checkpoint(path);
    const surge::rl::ActorCritic network = surge::rl::checkpoint_network(checkpoint);
    const std::size_t expected = static_cast<std::size_t>(network.table().total());
    if (checkpoint.params.size() != expected || checkpoint.adam_m.size() != expected ||
        checkpoint.adam_v.size() != expected) {
      std::fprintf(stderr, "fuzz: an accepted checkpoint holds %zu parameters for a network of %zu\n",
                   checkpoint.params.size(), expected);
      std::abort();
    }
  });
  return 0;
}
