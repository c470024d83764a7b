// NCCL between the GPUs of a run's ranks: ncclAllReduce enqueued on the learner's stream, so the CUDA
// graph of an iteration captures it. The communicator is bootstrapped through MPI: rank 0 makes the
// unique id and MPI_Bcast hands it to the others. Compiled when CMake finds CUDA and NCCL; without MPI
// only a communicator of one rank can be made (the GPU smoke test's).
#include <cuda_runtime.h>
#include <nccl.h>
#ifdef SURGE_WITH_MPI
#include <mpi.h>
#endif

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <thread>

#include "rl/collective.hpp"
#include "rl/collective_backends.hpp"
#include "sim/cuda_check.hpp"
#include "sim/error.hpp"

#define SURGE_NCCL_CHECK(expr) \
  SURGE_DETAIL_CHECK_STATUS(expr, #expr, ncclResult_t, ncclSuccess, ::surge::rl::nccl_name, ncclGetErrorString)

namespace surge::rl {
namespace {

const char* nccl_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    default: return "ncclResult";
  }
}

#ifdef SURGE_WITH_MPI
void broadcast_from_first(void* bytes, int count) {
  if (MPI_Bcast(bytes, count, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    throw Error("MPI_Bcast of the NCCL unique id failed");
}
bool any_rank(bool flag) {
  int value = flag ? 1 : 0;
  if (MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD) != MPI_SUCCESS)
    throw Error("MPI_Allreduce of the stop flag failed");
  return value != 0;
}
#else
void broadcast_from_first(void*, int) { SURGE_CHECK(false, "NCCL across ranks needs MPI to start"); }
bool any_rank(bool) {
  SURGE_CHECK(false, "NCCL across ranks needs MPI to start");
  return false;
}
#endif

class NcclCollective final : public Collective {
 public:
  NcclCollective(Device device, const RankPlace& place) : place_(place) {
    ncclUniqueId id{};
    if (place.rank == 0) SURGE_NCCL_CHECK(ncclGetUniqueId(&id));
    // A communicator of one rank (the GPU smoke test) needs no MPI, and no watchdog.
    if (place.size > 1) broadcast_from_first(&id, sizeof id);
    SURGE_CUDA_CHECK(cudaSetDevice(device.index));
    SURGE_NCCL_CHECK(ncclCommInitRank(&comm_, place.size, id, place.rank));
    beat();
    if (place.size > 1) watchdog_ = std::thread([this] { watch(); });
  }
  ~NcclCollective() override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      finished_ = true;
    }
    wake_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    if (comm_) ncclCommDestroy(comm_);
  }
  NcclCollective(const NcclCollective&) = delete;
  NcclCollective& operator=(const NcclCollective&) = delete;

  int rank() const override { return place_.rank; }
  int size() const override { return place_.size; }
  void all_reduce_sum(Span<float> values, const Stream& stream) const override {
    sum(values.data, values.size, ncclFloat32, stream);
  }
  void all_reduce_sum(Span<double> values, const Stream& stream) const override {
    sum(values.data, values.size, ncclFloat64, stream);
  }
  // Once per iteration on the host: a failure NCCL found on its own (a peer gone, a network error)
  // ends this rank with a line naming it, instead of a wait that never ends.
  bool any(bool flag) const override {
    ncclResult_t failure = ncclSuccess;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      SURGE_NCCL_CHECK(ncclCommGetAsyncError(comm_, &failure));
      if (failure != ncclSuccess) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
      }
    }
    if (failure != ncclSuccess)
      throw Error("NCCL failed on rank " + std::to_string(place_.rank) + " (" + place_.host +
                  "): " + ncclGetErrorString(failure) + "; the run stops");
    const bool result = place_.size == 1 ? flag : any_rank(flag);
    beat();
    return result;
  }
  std::vector<std::vector<std::byte>> gather(const std::vector<std::byte>& bytes) const override {
#ifdef SURGE_WITH_MPI
    if (place_.size > 1) return mpi_gather(bytes, place_);
#endif
    return {bytes};
  }
  std::string describe() const override {
    return "NCCL rank " + std::to_string(place_.rank) + " of " + std::to_string(place_.size) + " (" + place_.host + ")";
  }

 private:
  void sum(void* data, std::int64_t count, ncclDataType_t type, const Stream& stream) const {
    SURGE_CHECK(stream.device().is_cuda(), "NCCL sums device memory on a CUDA stream");
    if (count == 0) return;
    SURGE_NCCL_CHECK(ncclAllReduce(data, data, static_cast<std::size_t>(count), type, ncclSum, comm_,
                                   static_cast<cudaStream_t>(stream.native_handle())));
  }

  // The host comes back to any() once per iteration. A rank whose host has not for the rank timeout
  // waits on sums that another rank never joins (its stream blocked in NCCL, the host in a wait for the
  // stream): the watchdog aborts the communicator, which ends those waits, names this rank and ends the
  // job (the process exits, and mpirun stops the others). So does an error NCCL reports on its own.
  void beat() const { last_beat_ns_ = Clock::now().time_since_epoch().count(); }
  void watch() {
    const RankTimeout timeout = rank_timeout();
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return finished_; })) {
      ncclResult_t failure = ncclSuccess;
      if (comm_) ncclCommGetAsyncError(comm_, &failure);
      const double idle =
          std::chrono::duration<double>(Clock::now().time_since_epoch() - Clock::duration(last_beat_ns_.load()))
              .count();
      if (failure == ncclSuccess && idle < timeout.seconds) continue;
      std::cerr << timeout.command << ": NCCL rank " << place_.rank << " (" << place_.host << "): "
                << (failure != ncclSuccess ? std::string("NCCL failed: ") + ncclGetErrorString(failure)
                                           : "the sums across the ranks made no progress for " +
                                                 std::to_string(static_cast<long>(timeout.seconds)) +
                                                 " s (rank_timeout_s): another rank stalled or died")
                << "; the communicator is aborted and the job stops" << std::endl;
      if (comm_) ncclCommAbort(comm_);
      std::_Exit(1);
    }
  }

  using Clock = std::chrono::steady_clock;
  RankPlace place_;
  mutable ncclComm_t comm_ = nullptr;  // null once aborted
  mutable std::mutex mutex_;           // comm_ between the host and the watchdog
  std::condition_variable wake_;
  bool finished_ = false;
  mutable std::atomic<Clock::rep> last_beat_ns_{0};
  std::thread watchdog_;
};

}  // namespace

std::unique_ptr<Collective> open_nccl(Device device, const RankPlace& place) {
  return std::make_unique<NcclCollective>(device, place);
}

bool nccl_compiled() { return true; }

}  // namespace surge::rl
