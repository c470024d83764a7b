// DLPack export and import on the CUDA backend: the same cases as the CPU test (dlpack_cases.hpp),
// with kDLCUDA device types and device memory written through the imported views.
#include <catch2/catch.hpp>

#include "tests/support/dlpack_cases.hpp"

using namespace surge;
using namespace surge::testing;

TEST_CASE("DLPack export and import share memory on CUDA", "[dlpack][gpu]") { dlpack_shares_memory(Device::cuda(0)); }
TEST_CASE("every field exports with its shape, strides and dtype on CUDA", "[dlpack][gpu]") {
  dlpack_exports_every_field(Device::cuda(0));
}
TEST_CASE("DLPack deleters run exactly once and owners outlive the tensor on CUDA", "[dlpack][gpu]") {
  dlpack_deleter_and_lifetime(Device::cuda(0));
}
TEST_CASE("foreign DLPack layouts are read right on CUDA", "[dlpack][gpu]") {
  dlpack_reads_foreign_layouts(Device::cuda(0));
}
TEST_CASE("DLPack imports that do not match fail with a clear error on CUDA", "[dlpack][gpu]") {
  dlpack_error_paths(Device::cuda(0));
}
