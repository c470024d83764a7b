#pragma once
// Runtime facts that kernel launchers need; not part of the public interface.
namespace surge {
int cuda_multiprocessor_count(int device_index);  // cached per device
}
