// The device runtime: device discovery, streams and memory, for both backends.
// Compiled by nvcc when the CUDA toolkit is found, otherwise as plain C++ with CUDA left out.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "sim/cuda_probe.hpp"
#include "sim/device.hpp"
#include "sim/device_guard.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "sim/runtime_internal.hpp"
#include "sim/stream.hpp"

#if defined(__CUDACC__)
#include "sim/cuda_check.hpp"
#endif

namespace surge {

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

std::string cuda_version_string(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

const CudaStatus& cuda_status() {
  static const CudaStatus status = [] {
    const MachineVerdict& verdict = quick_machine_verdict();
    CudaStatus s;
    s.compiled = verdict.machine.cuda_built;
    s.usable = verdict.diagnosis.cuda_usable;
    s.device_count = static_cast<int>(verdict.machine.gpus.size());
    s.driver_version = verdict.machine.driver_cuda_version;
    s.runtime_version = verdict.machine.runtime_version;
    if (!s.usable)  // problems come first among the findings
      s.reason =
          verdict.diagnosis.findings.empty() ? verdict.diagnosis.headline : verdict.diagnosis.findings.front().what;
    return s;
  }();
  return status;
}

namespace {

// Why GPU `index` cannot run this build and what to do; `what` is empty when it can. When the quick
// verdict has no objection, a real kernel is loaded there: the final word (it creates the context).
Finding cuda_refusal(int index) {
  const MachineVerdict& quick = quick_machine_verdict();
  Finding refusal = quick.diagnosis.refusal(index);
  if (!refusal.what.empty()) return refusal;
  MachineDescription machine = quick.machine;
  for (GpuDescription& gpu : machine.gpus)
    if (gpu.index == index) probe_kernel_load(gpu);
  return diagnose(machine).refusal(index);
}

}  // namespace

DeviceChoice choose_device(std::string_view text) {
  if (text == "cpu") return {Device::cpu(), ""};
  if (text == "auto") {
    const Diagnosis& diagnosis = quick_machine_verdict().diagnosis;
    const int first = diagnosis.first_usable_gpu();
    const Finding refusal = first >= 0 ? cuda_refusal(first) : diagnosis.refusal(0);
    if (refusal.what.empty()) return {Device::cuda(first), ""};
    return {Device::cpu(), refusal.what};
  }
  int index = 0;
  if (text == "cuda") {
    index = 0;
  } else if (text.rfind("cuda:", 0) == 0 && text.size() > 5) {
    const std::string digits(text.substr(5));
    char* end = nullptr;
    const long value = std::strtol(digits.c_str(), &end, 10);
    if (*end != '\0' || value < 0)
      throw InputError("bad device '" + std::string(text) + "': use cpu, cuda, cuda:N or auto");
    index = static_cast<int>(value);
  } else {
    throw InputError("unknown device '" + std::string(text) + "': use cpu, cuda, cuda:N or auto");
  }
  const Finding refusal = cuda_refusal(index);
  if (!refusal.what.empty())
    throw InputError("--device " + std::string(text) + ": " + refusal.what + "; " + refusal.next_step +
                     ". Or run on the CPU with --device cpu; 'surge doctor' explains");
  return {Device::cuda(index), ""};
}

Device parse_device(std::string_view text) { return choose_device(text).device; }

// ---- the current device ----------------------------------------------------------------------

DeviceGuard::DeviceGuard(Device device) {
#if defined(__CUDACC__)
  if (!device.is_cuda()) return;
  int current = 0;
  SURGE_CUDA_CHECK(cudaGetDevice(&current));
  if (current == device.index) return;
  SURGE_CUDA_CHECK(cudaSetDevice(device.index));
  previous_ = current;
#else
  (void)device;
#endif
}

int DeviceGuard::current_cuda_device() {
#if defined(__CUDACC__)
  int current = 0;
  SURGE_CUDA_CHECK(cudaGetDevice(&current));
  return current;
#else
  return -1;
#endif
}

DeviceGuard::~DeviceGuard() {
#if defined(__CUDACC__)
  if (previous_ >= 0) SURGE_CUDA_CHECK_NOTHROW(cudaSetDevice(previous_));
#endif
}

// ---- streams ---------------------------------------------------------------------------------

namespace {
std::atomic<void (*)(void*)> g_stream_release_hook{nullptr};
}  // namespace

void set_stream_release_hook(void (*hook)(void* stream)) { g_stream_release_hook.store(hook); }

#if defined(__CUDACC__)
namespace {
void destroy_stream(void* stream) {
  if (const auto hook = g_stream_release_hook.load()) hook(stream);
  SURGE_CUDA_CHECK_NOTHROW(cudaStreamDestroy(static_cast<cudaStream_t>(stream)));
}
}  // namespace
#endif

Stream::Stream(Device device) : device_(device) {
  if (device.is_cuda()) {
#if defined(__CUDACC__)
    const DeviceGuard guard(device);
    cudaStream_t stream = nullptr;
    SURGE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    handle_ = NativeHandle(stream, destroy_stream);
#else
    throw Error("cannot create a CUDA stream: " + cuda_status().reason);
#endif
  }
}

void Stream::synchronize() const {
#if defined(__CUDACC__)
  if (device_.is_cuda()) SURGE_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(native_handle())));
#endif
}

void Stream::synchronize_noexcept() const noexcept {
#if defined(__CUDACC__)
  if (device_.is_cuda() && native_handle())
    SURGE_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(static_cast<cudaStream_t>(native_handle())));
#endif
}

// ---- memory ----------------------------------------------------------------------------------

namespace {
constexpr std::size_t kAlignment = 256;
// Buffers of at least kHugeBuffer bytes start on a 2 MiB boundary and ask Linux for transparent huge
// pages (where the system leaves them to madvise, as Debian's kernels do): a rollout's outputs are
// written a tile of environments at a time, each step's rows megabytes apart, so with 4 KiB pages nearly
// every row a tile writes is a TLB miss. Only the start moves: the size is rounded to 256 bytes as for
// any buffer, so that the memory plan stays what is used (the kernel backs whole 2 MiB extents with huge
// pages and the rest with small ones).
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kHugeBuffer = 2 * kHugePage;
}  // namespace

void* device_alloc(Device device, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  if (device.is_cpu()) {
    const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    const bool huge = rounded >= kHugeBuffer;
    void* pointer = nullptr;
    if (posix_memalign(&pointer, huge ? kHugePage : kAlignment, rounded) != 0 || !pointer)
      throw Error("out of host memory allocating " + std::to_string(bytes) + " bytes");
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (huge) (void)madvise(pointer, rounded, MADV_HUGEPAGE);  // a hint: refused is fine
#endif
    return pointer;
  }
#if defined(__CUDACC__)
  const DeviceGuard guard(device);
  void* pointer = nullptr;
  const cudaError_t err = cudaMalloc(&pointer, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    std::size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw Error("out of GPU memory on " + device.str() + ": asked for " + std::to_string(bytes >> 20) + " MiB with " +
                std::to_string(free_bytes >> 20) + " MiB free (" + cudaGetErrorString(err) + ")");
  }
  return pointer;
#else
  throw Error("cannot allocate on " + device.str() + ": " + cuda_status().reason);
#endif
}

void device_free(Device device, void* pointer) noexcept {
  if (!pointer) return;
  if (device.is_cpu()) {
    std::free(pointer);
    return;
  }
#if defined(__CUDACC__)
  try {
    const DeviceGuard guard(device);
    SURGE_CUDA_CHECK_NOTHROW(cudaFree(pointer));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "surge: freeing GPU memory on %s: %s\n", device.str().c_str(), e.what());
  }
#endif
}

Device copy_device(Device dst_device, Device src_device, const Stream& stream) {
  if (stream.device().is_cuda()) return stream.device();
  return src_device.is_cuda() ? src_device : dst_device;
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes,
                const Stream& stream) {
  if (bytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#if defined(__CUDACC__)
  const DeviceGuard guard(copy_device(dst_device, src_device, stream));
  SURGE_CUDA_CHECK(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream.native_handle())));
#else
  (void)stream;
  throw Error("cannot copy to or from a GPU: " + cuda_status().reason);
#endif
}

void zero_bytes(void* dst, Device device, std::size_t bytes, const Stream& stream) {
  if (bytes == 0) return;
  if (device.is_cpu()) {
    std::memset(dst, 0, bytes);
    return;
  }
#if defined(__CUDACC__)
  const DeviceGuard guard(copy_device(device, device, stream));
  SURGE_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, static_cast<cudaStream_t>(stream.native_handle())));
#else
  (void)stream;
  throw Error("cannot clear GPU memory: " + cuda_status().reason);
#endif
}

int cuda_multiprocessor_count(int device_index) {
#if defined(__CUDACC__)
  static std::mutex mutex;
  static int cached[64] = {};
  std::lock_guard<std::mutex> lock(mutex);
  if (device_index < 0 || device_index >= 64) return 1;
  if (cached[device_index] == 0) {
    int count = 0;
    SURGE_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device_index));
    cached[device_index] = count > 0 ? count : 1;
  }
  return cached[device_index];
#else
  (void)device_index;
  return 1;
#endif
}

}  // namespace surge

// ---- timing ----------------------------------------------------------------------------------
#include <algorithm>
#include <vector>

#include "sim/timer.hpp"

namespace surge {

StreamTimer::StreamTimer(const Stream& stream)
    : stream_(stream), start_event_(stream.device(), false, true), stop_event_(stream.device(), false, true) {}

void StreamTimer::start() {
  if (stream_.device().is_cuda())
    start_event_.record(stream_);
  else
    host_start_ = std::chrono::steady_clock::now();
}

void StreamTimer::stop() {
  if (stream_.device().is_cuda())
    stop_event_.record(stream_);
  else
    host_stop_ = std::chrono::steady_clock::now();
}

double StreamTimer::seconds() const {
  if (stream_.device().is_cuda()) return stop_event_.seconds_since(start_event_);
  return std::chrono::duration<double>(host_stop_ - host_start_).count();
}

double measure_copy_bandwidth(Device device, std::size_t bytes, int repeats) {
  Stream stream(device);
  const std::size_t elements = bytes / sizeof(float);
  DeviceBuffer<float> source(device, static_cast<std::int64_t>(elements));
  DeviceBuffer<float> target(device, static_cast<std::int64_t>(elements));
  zero_bytes(source.data(), device, source.bytes(), stream);
  copy_bytes(target.data(), device, source.data(), device, source.bytes(),
             stream);  // warm-up, and first touch on the CPU
  stream.synchronize();
  std::vector<double> rates;
  StreamTimer timer(stream);
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    timer.start();
    copy_bytes(target.data(), device, source.data(), device, source.bytes(), stream);
    timer.stop();
    rates.push_back(2.0 * static_cast<double>(source.bytes()) / timer.seconds());
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace surge
