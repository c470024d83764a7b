#pragma once
// Surge's views as DLPack tensors (DLManagedTensor) and back, with no copy. Needs only the DLPack
// header, not libtorch. The stream-ordering contract on CUDA is in docs/interop.md.
#include <dlpack/dlpack.h>

#include <string_view>

#include "sim/tensor_view.hpp"

namespace surge::interop {

// Exports `view` as a DLManagedTensor over the same memory (byte_offset 0, strides always given). The
// consumer takes ownership and must call its `deleter` exactly once when done with the memory; that
// releases `owner` (which keeps the memory alive until then) and frees the DLManagedTensor. Without an
// owner, the memory must outlive the consumer's use of it.
DLManagedTensor* to_dlpack(const TensorView& view, ViewOwner owner = nullptr);

// An imported DLManagedTensor, with a Surge view of its memory. Owns the DLManagedTensor: its deleter is
// called exactly once, when this is destroyed (or not at all after release()). Owners move.
class DlpackTensor {
 public:
  DlpackTensor() = default;
  explicit DlpackTensor(DLManagedTensor* managed) : managed_(managed) {}
  ~DlpackTensor() { reset(); }
  DlpackTensor(DlpackTensor&& other) noexcept;
  DlpackTensor& operator=(DlpackTensor&& other) noexcept;
  DlpackTensor(const DlpackTensor&) = delete;
  DlpackTensor& operator=(const DlpackTensor&) = delete;

  const TensorView& view() const { return view_; }
  template <class T>
  Span<T> span() const {
    return view_.span<T>();
  }
  // Gives the DLManagedTensor back to the caller, who then owes the deleter call.
  DLManagedTensor* release();

 private:
  friend DlpackTensor from_dlpack(DLManagedTensor*, const TensorSpec&, std::string_view);
  void reset() noexcept;
  DLManagedTensor* managed_ = nullptr;
  TensorView view_;
};

// Takes ownership of `managed` (even when it throws: the deleter has then run), reads its dtype, device,
// shape, strides (NULL meaning compact row-major) and byte_offset, and checks them against `expected`
// like from_torch does. kDLCUDAHost memory (pinned host memory) counts as cpu. A mismatch, an unknown
// dtype or device, vector lanes or a rank above kMaxTensorRank throw InputError naming `what`.
DlpackTensor from_dlpack(DLManagedTensor* managed, const TensorSpec& expected, std::string_view what = "DLPack tensor");

// The DLPack counterparts of Surge's dtypes and devices.
DLDataType dlpack_dtype(DType dtype);
DLDevice dlpack_device(Device device);

}  // namespace surge::interop
