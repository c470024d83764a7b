#pragma once
// Runs torch on Surge's CUDA stream. While a guard lives, torch's current stream on the stream's device
// is Surge's stream, so torch ops and Surge's kernels run in the order they were enqueued, with no
// event or synchronisation between them. On a CPU stream it does nothing (both run at once on the
// calling thread).
#include <memory>

#include "sim/stream.hpp"

namespace surge::interop {

class TorchStreamGuard {
 public:
  // Throws InputError for a CUDA stream when this libtorch (or this build of Surge) has no CUDA.
  explicit TorchStreamGuard(const Stream& stream);
  ~TorchStreamGuard();
  TorchStreamGuard(const TorchStreamGuard&) = delete;
  TorchStreamGuard& operator=(const TorchStreamGuard&) = delete;

 private:
  struct Active;  // torch's stream guard; CUDA types stay out of this header
  std::unique_ptr<Active> active_;
};

}  // namespace surge::interop
