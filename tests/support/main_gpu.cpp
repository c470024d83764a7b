// Entry point of GPU tests: without a usable GPU they report themselves skipped (exit 77, which ctest
// shows as "Skipped"), never passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "sim/device.hpp"

int main(int argc, char** argv) {
  const surge::CudaStatus& cuda = surge::cuda_status();
  if (!cuda.usable) {
    std::printf("SKIPPED: no usable GPU (%s)\n", cuda.reason.c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
