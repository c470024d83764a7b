// Row copies, events, pinned mirrors and the device guard on CUDA: the fallbacks copy_rows takes when a
// pitch exceeds the device's maximum (forced with a small injected maximum) against the pitched copy,
// a mirror destroyed with its copies in flight, and work on the right GPU whatever device is current.
// Runs only where a usable GPU exists (the GPU test main reports a skip otherwise).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "rl/device_graph.hpp"
#include "sim/device_guard.hpp"
#include "sim/memory.hpp"
#include "sim/transfer.hpp"

using namespace surge;

namespace {

const Device kCpu = Device::cpu();
const Device kCuda = Device::cuda(0);

int current_device() { return DeviceGuard::current_cuda_device(); }

}  // namespace

TEST_CASE("copy_rows gives the same bytes by every method, to and from the GPU", "[transfer][gpu]") {
  const std::size_t rows = 9, src_pitch = 40, row_bytes = 12;
  std::vector<std::uint8_t> host(rows * src_pitch);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::uint8_t>(i * 7 + 3);
  Stream stream(kCuda);
  DeviceBuffer<std::uint8_t> device_rows(kCuda, static_cast<std::int64_t>(host.size()));
  from_host(device_rows.span(), host, stream);
  // 0: the device's own maximum (one pitched copy); 16: below both pitches (one copy per row);
  // 24: between them (still one copy per row, as the source pitch is over it).
  for (std::size_t max_pitch : {std::size_t(0), std::size_t(16), std::size_t(24)}) {
    INFO("max pitch " << max_pitch);
    std::vector<std::uint8_t> packed(rows * row_bytes, 0);
    copy_rows(packed.data(), row_bytes, kCpu, device_rows.data(), src_pitch, kCuda, row_bytes, rows, stream, max_pitch);
    stream.synchronize();
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t b = 0; b < row_bytes; ++b) CHECK(packed[r * row_bytes + b] == host[r * src_pitch + b]);
    // Back up, spread over a pitch again, into device memory that starts zeroed.
    DeviceBuffer<std::uint8_t> spread(kCuda, static_cast<std::int64_t>(host.size()));
    zero_bytes(spread.data(), kCuda, spread.bytes(), stream);
    copy_rows(spread.data(), src_pitch, kCuda, packed.data(), row_bytes, kCpu, row_bytes, rows, stream, max_pitch);
    const std::vector<std::uint8_t> back = to_host(spread.cspan(), stream);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t b = 0; b < src_pitch; ++b)
        CHECK(back[r * src_pitch + b] == (b < row_bytes ? host[r * src_pitch + b] : 0));
  }
}

TEST_CASE("a pinned mirror destroyed with copies in flight waits for them", "[transfer][gpu]") {
  Stream stream(kCuda);
  const std::int64_t count = std::int64_t(1) << 22;
  DeviceBuffer<float> source(kCuda, count);
  zero_bytes(source.data(), kCuda, source.bytes(), stream);
  for (int round = 0; round < 4; ++round) {
    rl::HostMirror mirror(kCuda, source.bytes(), 2);
    mirror.copy_async(0, source.data(), stream);
    mirror.copy_async(1, source.data(), stream);
  }  // each mirror frees its pinned memory here, after its copies
  stream.synchronize();
  rl::HostMirror mirror(kCuda, sizeof(float), 1);
  mirror.copy_async(0, source.data(), stream);
  CHECK(*static_cast<const float*>(mirror.wait(0)) == 0.0f);
}

TEST_CASE("the device guard switches only when needed and restores the caller's device", "[transfer][gpu]") {
  const int count = cuda_status().device_count;
  const int before = current_device();
  for (int index = 0; index < count; ++index) {
    {
      const DeviceGuard guard(Device::cuda(index));
      CHECK(current_device() == index);
    }
    CHECK(current_device() == before);
  }
}

TEST_CASE("work for the last GPU lands there while another device is current", "[transfer][gpu]") {
  const int count = cuda_status().device_count;
  if (count < 2) return;  // one GPU: the case above covers the guard
  const Device last = Device::cuda(count - 1);
  const DeviceGuard first(Device::cuda(0));
  Stream stream(last);
  CHECK(current_device() == 0);
  DeviceBuffer<float> values(last, 1000);
  from_host(values.span(), std::vector<float>(1000, 2.5f), stream);
  std::vector<float> packed(10);
  copy_rows(packed.data(), sizeof(float), kCpu, values.data(), 100 * sizeof(float), last, sizeof(float), 10, stream);
  Event done(last, /*blocking_sync=*/true);
  done.record(stream);
  done.synchronize();
  CHECK(current_device() == 0);
  for (float v : packed) CHECK(v == 2.5f);
}
