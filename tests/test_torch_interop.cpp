// libtorch interop on the CPU backend (the cases are in torch_interop_cases.hpp).
#include "tests/support/torch_interop_cases.hpp"

using namespace surge;
using namespace surge::testing;

TEST_CASE("writes through torch tensors are seen by Surge and the other way round (CPU)", "[torch]") {
  torch_write_through(Device::cpu());
}
TEST_CASE("every exported field has its shape, strides, dtype and address in torch (CPU)", "[torch]") {
  torch_every_field(Device::cpu());
}
TEST_CASE("a torch policy drives an engine through the rollout tensors (CPU)", "[torch]") {
  torch_drives_engine(Device::cpu());
}
TEST_CASE("parameter views in torch compute Surge's logits; torch's gradients land in Surge's (CPU)", "[torch]") {
  torch_parameter_views(Device::cpu());
}
TEST_CASE("tensors keep their owner alive exactly as long as they live (CPU)", "[torch]") {
  torch_lifetime(Device::cpu());
}
TEST_CASE("from_torch and to_torch refuse what does not fit, naming what was expected (CPU)", "[torch]") {
  torch_error_paths(Device::cpu());
}
TEST_CASE("DLPack tensors pass between Surge and torch's own converter (CPU)", "[torch][dlpack]") {
  dlpack_with_torch(Device::cpu());
}
