#pragma once
// A CUDA object (stream, event, graph) held as void* so that plain C++ code can own one: destroyed by
// the function it was made with, moved but never copied, empty on the CPU backend.
#include <memory>

namespace surge {

using NativeHandle = std::unique_ptr<void, void (*)(void*)>;

inline NativeHandle no_native_handle() { return NativeHandle(nullptr, nullptr); }

}  // namespace surge
