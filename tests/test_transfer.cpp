// Row copies: which method copy_rows picks on CUDA (a pure function of the shapes and the device's
// largest pitch), and the CPU backend's copies themselves.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "sim/device_guard.hpp"
#include "sim/transfer.hpp"

using namespace surge;

TEST_CASE("copy_plan keeps one pitched copy while both pitches fit the device", "[transfer]") {
  const std::size_t max_pitch = (std::size_t(1) << 31) - 1;
  CHECK(copy_plan(64, 1024, 64, 129, max_pitch) == RowCopyMethod::Pitched);
  CHECK(copy_plan(1024, 64, 64, 129, max_pitch) == RowCopyMethod::Pitched);
  CHECK(copy_plan(max_pitch, max_pitch, 16, 2, max_pitch) == RowCopyMethod::Pitched);
}

TEST_CASE("copy_plan falls back when a pitch exceeds the device's maximum", "[transfer]") {
  const std::size_t max_pitch = (std::size_t(1) << 31) - 1;
  // The rollout log at N = 2^27 with 16-byte observations: the source pitch is 2^31 bytes.
  const std::size_t pitch = (std::size_t(1) << 27) * 16;
  CHECK(copy_plan(16 * 1024, pitch, 16 * 1024, 129, max_pitch) == RowCopyMethod::RowByRow);
  CHECK(copy_plan(pitch, 16 * 1024, 16 * 1024, 129, max_pitch) == RowCopyMethod::RowByRow);
  CHECK(copy_plan(max_pitch + 1, max_pitch, 16, 2, max_pitch) == RowCopyMethod::RowByRow);
  // Rows that touch on both sides are one linear copy whatever their size.
  CHECK(copy_plan(pitch, pitch, pitch, 129, max_pitch) == RowCopyMethod::Contiguous);
  // A single row needs no pitch at all.
  CHECK(copy_plan(16 * 1024, pitch, 16 * 1024, 1, max_pitch) == RowCopyMethod::Contiguous);
}

TEST_CASE("copy_plan with a small injected maximum, as the GPU test forces it", "[transfer]") {
  CHECK(copy_plan(8, 32, 8, 4, 16) == RowCopyMethod::RowByRow);
  CHECK(copy_plan(8, 16, 8, 4, 16) == RowCopyMethod::Pitched);
  CHECK(copy_plan(32, 32, 32, 4, 16) == RowCopyMethod::Contiguous);
}

TEST_CASE("copy_rows on the CPU copies each row and leaves the gaps", "[transfer]") {
  const std::size_t rows = 5, src_pitch = 12, dst_pitch = 7, row_bytes = 4;
  std::vector<std::uint8_t> src(rows * src_pitch), dst(rows * dst_pitch, 0xEE);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i);
  Stream stream(Device::cpu());
  for (std::size_t max_pitch : {std::size_t(0), std::size_t(4)}) {
    copy_rows(dst.data(), dst_pitch, Device::cpu(), src.data(), src_pitch, Device::cpu(), row_bytes, rows, stream,
              max_pitch);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t b = 0; b < dst_pitch; ++b)
        CHECK(dst[r * dst_pitch + b] == (b < row_bytes ? src[r * src_pitch + b] : 0xEE));
  }
}

TEST_CASE("a device guard on the CPU changes nothing", "[transfer]") {
  const DeviceGuard guard(Device::cpu());
  SUCCEED();
}
