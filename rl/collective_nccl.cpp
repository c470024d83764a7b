// NCCL between the GPUs of a run's ranks: ncclAllReduce enqueued on the learner's stream, so the CUDA
// graph of an iteration captures it. The communicator is bootstrapped through MPI: rank 0 makes the
// unique id and MPI_Bcast hands it to the others. Compiled when CMake finds CUDA and NCCL; without MPI
// only a communicator of one rank can be made (the GPU smoke test's).
#include <cuda_runtime.h>
#include <nccl.h>
#ifdef SURGE_WITH_MPI
#include <mpi.h>
#endif

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
    // A communicator of one rank (the GPU smoke test) needs no MPI.
    if (place.size > 1) broadcast_from_first(&id, sizeof id);
    SURGE_CUDA_CHECK(cudaSetDevice(device.index));
    SURGE_NCCL_CHECK(ncclCommInitRank(&comm_, place.size, id, place.rank));
  }
  ~NcclCollective() override {
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
    SURGE_NCCL_CHECK(ncclCommGetAsyncError(comm_, &failure));
    if (failure != ncclSuccess) {
      ncclCommAbort(comm_);
      comm_ = nullptr;
      throw Error("NCCL failed on rank " + std::to_string(place_.rank) + " (" + place_.host +
                  "): " + ncclGetErrorString(failure) + "; the run stops");
    }
    return place_.size == 1 ? flag : any_rank(flag);
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

  RankPlace place_;
  mutable ncclComm_t comm_ = nullptr;  // null once aborted
};

}  // namespace

std::unique_ptr<Collective> open_nccl(Device device, const RankPlace& place) {
  return std::make_unique<NcclCollective>(device, place);
}

bool nccl_compiled() { return true; }

}  // namespace surge::rl
