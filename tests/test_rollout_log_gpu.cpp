// The rollout log fed from GPU memory (page-locked staging on a copy stream, ordered by events)
// against its CPU twin: the same synthetic rollout logged from the device and from host memory must
// give the same values. Also checks that fields captured at begin_iteration are copied before later
// work on the compute stream overwrites them. Skipped (exit 77) without a usable GPU.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "rl/io/rollout_file.hpp"
#include "rl/io/rollout_log.hpp"
#include "sim/memory.hpp"
#include "sim/stream.hpp"
#include "tests/support/synthetic_rollout.hpp"

namespace fs = std::filesystem;
using namespace surge;
using namespace surge::rl;
using surge::testing::SyntheticRollout;

namespace {

// The synthetic rollout's buffers mirrored on `device`; the host side fills them.
struct DeviceRollout {
  SyntheticRollout host;
  Device device;
  DeviceBuffer<float> obs, rewards, values, start_returns;
  DeviceBuffer<std::int32_t> actions, start_lengths;
  DeviceBuffer<std::uint8_t> terminated, truncated;

  explicit DeviceRollout(Device d)
      : device(d),
        obs(d, static_cast<std::int64_t>(host.obs_buffer.size())),
        rewards(d, static_cast<std::int64_t>(host.rewards.size())),
        values(d, static_cast<std::int64_t>(host.values.size())),
        start_returns(d, static_cast<std::int64_t>(host.start_returns.size())),
        actions(d, static_cast<std::int64_t>(host.actions.size())),
        start_lengths(d, static_cast<std::int64_t>(host.start_lengths.size())),
        terminated(d, static_cast<std::int64_t>(host.terminated_flags.size())),
        truncated(d, static_cast<std::int64_t>(host.truncated_flags.size())) {}

  std::vector<LogField> fields() const {
    std::vector<LogField> f = host.fields();  // same names, types and shapes; device pointers instead
    const void* pointers[] = {obs.data(),       actions.data(), rewards.data(),       terminated.data(),
                              truncated.data(), values.data(),  start_returns.data(), start_lengths.data()};
    REQUIRE(f.size() == std::size(pointers));
    for (std::size_t k = 0; k < f.size(); ++k) f[k].data = pointers[k];
    return f;
  }

  void run(RolloutLog& log, std::int64_t i, const Stream& stream) {
    host.fill_begin(i);
    from_host(start_returns.span(), host.start_returns, stream);
    from_host(start_lengths.span(), host.start_lengths, stream);
    log.begin_iteration(i, stream);
    // The rollout overwrites the accumulators on the compute stream, with no host wait in between:
    // the log's copies must come first.
    host.scribble_begin_fields();
    copy_bytes(start_returns.data(), device, host.start_returns.data(), Device::cpu(), start_returns.bytes(), stream);
    copy_bytes(start_lengths.data(), device, host.start_lengths.data(), Device::cpu(), start_lengths.bytes(), stream);
    host.fill_rollout(i);
    from_host(obs.span(), host.obs_buffer, stream);
    from_host(actions.span(), host.actions, stream);
    from_host(rewards.span(), host.rewards, stream);
    from_host(terminated.span(), host.terminated_flags, stream);
    from_host(truncated.span(), host.truncated_flags, stream);
    from_host(values.span(), host.values, stream);
    log.end_iteration(SyntheticRollout::global_step(i), stream);
  }
};

void write_log(Device device, const std::string& path) {
  DeviceRollout rollout(device);
  RolloutLogOptions options = rollout.host.options(path, 1);
  options.device = device;
  options.queue_depth = 16;
  Stream stream(device);
  RolloutLog log(options, rollout.fields());
  for (std::int64_t i = 0; i < 12; ++i) rollout.run(log, i, stream);
  stream.synchronize();
  log.close();
  REQUIRE(log.stats().written == 12);
  REQUIRE_FALSE(log.stats().failed);
}

}  // namespace

TEST_CASE("A rollout logged from the GPU equals its CPU twin", "[rollout_log][gpu]") {
  const fs::path folder = fs::temp_directory_path() / ("surge_test_rollout_log_gpu_" + std::to_string(::getpid()));
  fs::create_directories(folder);
  const std::string cpu_path = (folder / "cpu.h5").string(), gpu_path = (folder / "gpu.h5").string();
  write_log(Device::cpu(), cpu_path);
  write_log(Device::cuda(0), gpu_path);
  const RolloutFile cpu(cpu_path), gpu(gpu_path);
  CHECK(gpu.iterations() == cpu.iterations());
  CHECK(gpu.global_steps() == cpu.global_steps());
  for (const std::string& name : cpu.dataset_names()) {
    INFO(name);
    const DatasetValues a = cpu.read(name), b = gpu.read(name);
    CHECK(b.shape == a.shape);
    CHECK(b.values == a.values);
  }
  // And both hold the accumulators as they were before the rollout overwrote them.
  const DatasetValues start = gpu.read(kStartEpisodeLengthField, gpu.row_of_iteration(5));
  CHECK(start.values[0] == SyntheticRollout::start_length(5, SyntheticRollout::first_env));
  fs::remove_all(folder);
}

TEST_CASE("A GPU rollout log closed with an iteration begun waits for its copies", "[rollout_log][gpu]") {
  const fs::path folder =
      fs::temp_directory_path() / ("surge_test_rollout_log_gpu_close_" + std::to_string(::getpid()));
  fs::create_directories(folder);
  const Device device = Device::cuda(0);
  DeviceRollout rollout(device);
  RolloutLogOptions options = rollout.host.options((folder / "begun.h5").string(), 1);
  options.device = device;
  options.queue_depth = 2;
  Stream stream(device);
  {
    RolloutLog log(options, rollout.fields());
    rollout.run(log, 0, stream);
    rollout.host.fill_begin(1);
    from_host(rollout.start_returns.span(), rollout.host.start_returns, stream);
    REQUIRE(log.begin_iteration(1, stream));  // its copies may still be in flight at close()
    log.close();
    CHECK(log.stats().written == 1);
    CHECK_FALSE(log.stats().failed);
  }  // the staging is freed here
  stream.synchronize();
  const RolloutFile file((folder / "begun.h5").string());
  CHECK(file.iterations().size() == 1);
  fs::remove_all(folder);
}
