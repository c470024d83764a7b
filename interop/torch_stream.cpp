#include "interop/torch_stream.hpp"

#include "sim/error.hpp"

#if SURGE_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace surge::interop {

#if SURGE_TORCH_CUDA
struct TorchStreamGuard::Active {
  c10::cuda::CUDAStreamGuard guard;  // also makes the stream's device current, and restores both
};
#else
struct TorchStreamGuard::Active {};
#endif

TorchStreamGuard::TorchStreamGuard(const Stream& stream) {
  if (stream.device().is_cpu()) return;
#if SURGE_TORCH_CUDA
  const auto index = static_cast<c10::DeviceIndex>(stream.device().index);
  const c10::cuda::CUDAStream torch_stream =
      c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(stream.native_handle()), index);
  active_.reset(new Active{c10::cuda::CUDAStreamGuard(torch_stream)});
#else
  throw InputError("TorchStreamGuard: the stream is on " + stream.device().str() +
                   " but Surge's interop was built without a CUDA-enabled libtorch (SURGE_TORCH_PREFIX)");
#endif
}

TorchStreamGuard::~TorchStreamGuard() = default;

}  // namespace surge::interop
