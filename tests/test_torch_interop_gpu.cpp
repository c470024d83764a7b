// libtorch interop on the CUDA backend, with a CUDA-enabled libtorch (the cases are in
// torch_interop_cases.hpp, with torch running on Surge's stream), and the worked example on CUDA.
#include <cstdio>
#include <string>

#include "tests/support/run_surge.hpp"
#include "tests/support/torch_interop_cases.hpp"

using namespace surge;
using namespace surge::testing;

TEST_CASE("writes through torch tensors are seen by Surge and the other way round (CUDA)", "[torch][gpu]") {
  torch_write_through(Device::cuda(0));
}
TEST_CASE("every exported field has its shape, strides, dtype and address in torch (CUDA)", "[torch][gpu]") {
  torch_every_field(Device::cuda(0));
}
TEST_CASE("a torch policy drives an engine through the rollout tensors (CUDA)", "[torch][gpu]") {
  torch_drives_engine(Device::cuda(0));
}
TEST_CASE("parameter views in torch compute Surge's logits; torch's gradients land in Surge's (CUDA)", "[torch][gpu]") {
  torch_parameter_views(Device::cuda(0));
}
TEST_CASE("tensors keep their owner alive exactly as long as they live (CUDA)", "[torch][gpu]") {
  torch_lifetime(Device::cuda(0));
}
TEST_CASE("from_torch and to_torch refuse what does not fit, naming what was expected (CUDA)", "[torch][gpu]") {
  torch_error_paths(Device::cuda(0));
}
TEST_CASE("DLPack tensors pass between Surge and torch's own converter (CUDA)", "[torch][dlpack][gpu]") {
  dlpack_with_torch(Device::cuda(0));
}

TEST_CASE("the worked example runs on CUDA and its torch account agrees with Surge's", "[torch][gpu]") {
  const Result r = run_program(SURGE_TORCH_POLICY_BINARY, "--device cuda --num-envs 65536 --steps 256");
  std::printf("%s%s", r.out.c_str(), r.err.c_str());
  CHECK(r.exit_code == 0);
}
