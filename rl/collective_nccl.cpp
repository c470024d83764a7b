// NCCL between the GPUs of a run's ranks: ncclAllReduce enqueued on the learner's stream, so the CUDA
// graph of an iteration captures it. The communicator is bootstrapped through MPI: rank 0 makes the
// unique id and MPI_Bcast hands it to the others. Compiled when CMake finds CUDA, MPI and NCCL.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

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

class NcclCollective final : public Collective {
 public:
  NcclCollective(Device device, const RankPlace& place) : place_(place) {
    ncclUniqueId id{};
    if (place.rank == 0) SURGE_NCCL_CHECK(ncclGetUniqueId(&id));
    if (MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
      throw Error("surge: MPI_Bcast of the NCCL unique id failed");
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
  bool any(bool flag) const override {
    int value = flag ? 1 : 0;
    if (MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD) != MPI_SUCCESS)
      throw Error("surge: MPI_Allreduce of the stop flag failed");
    return value != 0;
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
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::unique_ptr<Collective> open_nccl(Device device, const RankPlace& place) {
  return std::make_unique<NcclCollective>(device, place);
}

bool nccl_compiled() { return true; }

}  // namespace surge::rl
