// DLPack export and import on the CPU backend (the cases are in dlpack_cases.hpp), and pinned host
// memory (kDLCUDAHost), which counts as cpu.
#include <catch2/catch.hpp>

#include "tests/support/dlpack_cases.hpp"

using namespace surge;
using namespace surge::testing;

TEST_CASE("DLPack export and import share memory on the CPU", "[dlpack]") { dlpack_shares_memory(Device::cpu()); }
TEST_CASE("every field exports with its shape, strides and dtype on the CPU", "[dlpack]") {
  dlpack_exports_every_field(Device::cpu());
}
TEST_CASE("DLPack deleters run exactly once and owners outlive the tensor on the CPU", "[dlpack]") {
  dlpack_deleter_and_lifetime(Device::cpu());
}
TEST_CASE("foreign DLPack layouts are read right on the CPU", "[dlpack]") {
  dlpack_reads_foreign_layouts(Device::cpu());
}
TEST_CASE("DLPack imports that do not match fail with a clear error on the CPU", "[dlpack]") {
  dlpack_error_paths(Device::cpu());
}

TEST_CASE("kDLCUDAHost memory imports as cpu memory", "[dlpack]") {
  DeviceBuffer<std::uint8_t> flags(Device::cpu(), 6);
  int calls = 0;
  DLManagedTensor* managed = ForeignTensor::make(flags.data(), Device::cpu(), {kDLUInt, 8, 1}, {2, 3}, {3, 1}, &calls);
  managed->dl_tensor.device = {kDLCUDAHost, 0};
  {
    const interop::DlpackTensor imported = interop::from_dlpack(managed, {DType::UInt8, Device::cpu(), {2, 3}});
    CHECK(imported.view().device == Device::cpu());
    imported.span<std::uint8_t>()[4] = 1;
  }
  CHECK(flags.data()[4] == 1);
  CHECK(calls == 1);
}
