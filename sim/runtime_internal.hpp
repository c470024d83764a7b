#pragma once
// Runtime facts that kernel launchers need; not part of the public interface.
#include "sim/stream.hpp"

namespace surge {
int cuda_multiprocessor_count(int device_index);  // cached per device
// The GPU a copy between two devices runs on: the stream's, or else the GPU among the two ends.
Device copy_device(Device dst_device, Device src_device, const Stream& stream);
}  // namespace surge
