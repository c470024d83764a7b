// surge::Rng on the device against cuRAND's own Philox generator (curand_init / curand /
// curand_uniform from curand_kernel.h) and against the host Rng: all three must give the same
// bits for the same (seed, subsequence, offset), including offsets inside a four-word block.
// And the Gaussian policy's normal draws (rl/gaussian.hpp) against curand_normal: the same bits on the
// device, and close to the host's. Built only with CUDA; runs only where a usable GPU exists.
#include <curand_kernel.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "rl/gaussian.hpp"
#include "sim/cuda_check.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"

using surge::Device;
using surge::DeviceBuffer;
using surge::Rng;

namespace {

constexpr int kWords = 11;  // crosses block boundaries from any starting offset

struct StreamKey {
  std::uint64_t seed, subsequence, offset;
};

// What each generator drew for one key, [kWords] each.
struct Draws {
  std::uint32_t curand_words[kWords];
  float curand_uniforms[kWords];
  std::uint32_t rng_words[kWords];
  float rng_uniforms[kWords];
  float rng_ranged[kWords];  // uniform(-0.05, 0.05), what resets use
};

// ============================== kernels ==============================

__global__ void draw_kernel(const StreamKey* keys, int count, Draws* out) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= count) return;
  const StreamKey key = keys[j];
  Draws& draws = out[j];
  curandStatePhilox4_32_10_t words_state, uniforms_state;
  curand_init(key.seed, key.subsequence, key.offset, &words_state);
  curand_init(key.seed, key.subsequence, key.offset, &uniforms_state);
  Rng words(key.seed, key.subsequence, key.offset), uniforms(key.seed, key.subsequence, key.offset),
      ranged(key.seed, key.subsequence, key.offset);
  for (int k = 0; k < kWords; ++k) {
    draws.curand_words[k] = curand(&words_state);
    draws.curand_uniforms[k] = curand_uniform(&uniforms_state);
    draws.rng_words[k] = words.next_u32();
    draws.rng_uniforms[k] = uniforms.uniform();
    draws.rng_ranged[k] = ranged.uniform(-0.05f, 0.05f);
  }
}

constexpr int kNormals = 10;  // five Box-Muller pairs: crosses block boundaries from any starting offset

struct NormalDraws {
  float curand_normals[kNormals];  // curand_normal, called kNormals times
  float rng_normals[kNormals];     // standard_normal_pair's x then y, kNormals / 2 times
};

__global__ void normal_kernel(const StreamKey* keys, int count, NormalDraws* out) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= count) return;
  const StreamKey key = keys[j];
  NormalDraws& draws = out[j];
  curandStatePhilox4_32_10_t state;
  curand_init(key.seed, key.subsequence, key.offset, &state);
  Rng rng(key.seed, key.subsequence, key.offset);
  for (int k = 0; k < kNormals; k += 2) {
    const surge::rl::NormalPair pair = surge::rl::standard_normal_pair(rng);
    draws.rng_normals[k] = pair.x;
    draws.rng_normals[k + 1] = pair.y;
  }
  for (int k = 0; k < kNormals; ++k) draws.curand_normals[k] = curand_normal(&state);
}

// ============================== launchers ==============================

// Runs `kernel` on the GPU with one thread per key and returns what each thread wrote.
template <class Result>
std::vector<Result> run_per_key(void (*kernel)(const StreamKey*, int, Result*), const std::vector<StreamKey>& keys) {
  const Device cuda = Device::cuda(0);
  surge::Stream stream(cuda);
  const auto count = static_cast<std::int64_t>(keys.size());
  DeviceBuffer<StreamKey> device_keys(cuda, count);
  DeviceBuffer<Result> device_results(cuda, count);
  surge::from_host(device_keys.span(), keys, stream);
  const int threads = 64;
  kernel<<<static_cast<unsigned>((count + threads - 1) / threads), threads, 0,
           static_cast<cudaStream_t>(stream.native_handle())>>>(device_keys.data(), static_cast<int>(count),
                                                                device_results.data());
  SURGE_CUDA_CHECK_LAUNCH();
  return surge::to_host(device_results.cspan(), stream);
}

std::vector<Draws> draw_on_device(const std::vector<StreamKey>& keys) { return run_per_key(draw_kernel, keys); }

std::vector<NormalDraws> normals_on_device(const std::vector<StreamKey>& keys) {
  return run_per_key(normal_kernel, keys);
}

}  // namespace

TEST_CASE("device Gaussian draws are curand_normal's bit for bit, and the host's within __sincosf's error",
          "[gpu][philox][gaussian]") {
  using surge::rng_subsequence;
  using surge::RngPurpose;
  std::vector<StreamKey> keys = {
      {0, 0, 0}, {78, rng_subsequence(RngPurpose::Action, 3), 6}, {0xffffffffffffffffull, 7, 5}};
  for (std::uint64_t i = 0; i < 4000; ++i) keys.push_back({9, rng_subsequence(RngPurpose::Action, i), 2 * i});
  const std::vector<NormalDraws> device = normals_on_device(keys);
  REQUIRE(device.size() == keys.size());
  std::int64_t differ_from_curand = 0, far_from_host = 0;
  double worst = 0.0;
  for (std::size_t j = 0; j < keys.size(); ++j) {
    const StreamKey& key = keys[j];
    Rng host(key.seed, key.subsequence, key.offset);
    for (int k = 0; k < kNormals; k += 2) {
      const surge::rl::NormalPair pair = surge::rl::standard_normal_pair(host);
      for (int c = 0; c < 2; ++c) {
        const float on_device = device[j].rng_normals[k + c], on_host = c == 0 ? pair.x : pair.y;
        differ_from_curand += on_device != device[j].curand_normals[k + c];
        // __sincosf's absolute error on (0, 2 pi] plus a last-bit difference in the angle: < 1.6e-6,
        // times the radius s <= |x| + |y|; a misplaced or swapped draw is off by O(1).
        const double radius = std::abs(pair.x) + std::abs(pair.y);
        const double difference = std::abs(double(on_device) - double(on_host));
        worst = std::max(worst, difference);
        far_from_host += difference > 4e-6 * radius + 1e-7;
      }
    }
  }
  INFO("worst host-device difference " << worst << " over " << keys.size() * kNormals << " draws");
  CHECK(differ_from_curand == 0);
  CHECK(far_from_host == 0);
}

TEST_CASE("device Rng, cuRAND and host Rng draw the same bits", "[gpu][philox]") {
  using surge::rng_subsequence;
  using surge::RngPurpose;
  const std::vector<StreamKey> keys = {
      {0, 0, 0},
      {1, 0, 3},
      {42, 7, 1},
      {0x0123456789abcdefull, 3, 5},
      {7, (std::uint64_t(1) << 40) | 9, 2},
      {123, rng_subsequence(RngPurpose::Action, 5), 6},
      {2024, rng_subsequence(RngPurpose::EnvReset, 1000000), 4003},
      {0xffffffffffffffffull, 0xffff, 1000000000007ull},
      {99, rng_subsequence(RngPurpose::Shuffle, 0), 4096},
  };
  const std::vector<Draws> device = draw_on_device(keys);
  REQUIRE(device.size() == keys.size());
  for (std::size_t j = 0; j < keys.size(); ++j) {
    const StreamKey& key = keys[j];
    INFO("seed " << key.seed << ", subsequence " << key.subsequence << ", offset " << key.offset);
    Rng words(key.seed, key.subsequence, key.offset), uniforms(key.seed, key.subsequence, key.offset),
        ranged(key.seed, key.subsequence, key.offset);
    for (int k = 0; k < kWords; ++k) {
      INFO("draw " << k);
      const std::uint32_t host_word = words.next_u32();
      const float host_uniform = uniforms.uniform();
      const float host_ranged = ranged.uniform(-0.05f, 0.05f);
      CHECK(device[j].curand_words[k] == host_word);
      CHECK(device[j].rng_words[k] == host_word);
      CHECK(device[j].curand_uniforms[k] == host_uniform);
      CHECK(device[j].rng_uniforms[k] == host_uniform);
      CHECK(device[j].rng_ranged[k] == host_ranged);
    }
    CHECK(words.offset() == key.offset + kWords);
  }
}
