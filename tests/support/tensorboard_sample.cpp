// Writes a TensorBoard event file of known scalars into the folder given, for check_tensorboard.py
// to read back with TensorBoard's own reader. The values follow the formula in that script.
#include <cstdio>
#include <exception>

#include "rl/io/tensorboard.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tensorboard_sample FOLDER\n");
    return 2;
  }
  try {
    surge::rl::TensorBoardWriter writer(argv[1]);
    const char* tags[] = {"episode_return", "loss/value", "approx_kl"};
    for (int k = 0; k < 50; ++k) {
      const long long step = 1000LL * k;
      surge::rl::ScalarValues scalars;
      for (int t = 0; t < 3; ++t)
        scalars.emplace_back(tags[t], static_cast<float>((t + 1) * 0.125 * k - 2.0 + t * 1e-3));
      writer.add_scalars(step, scalars, 1.7e9 + k);
    }
    std::printf("%s\n", writer.path().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensorboard_sample: %s\n", e.what());
    return 1;
  }
  return 0;
}
