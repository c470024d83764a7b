// MPI's world as the run's collective: MPI_Allreduce on the CPU, and the launch, ranks and shutdown
// for NCCL on CUDA. Compiled when CMake finds MPI (SURGE_WITH_MPI).
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>

#include "rl/collective.hpp"
#include "rl/collective_backends.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(std::string(call) + " failed: " + text);
}

// mpirun (Open MPI), Hydra (MPICH) and PMIx launchers set these in every rank's environment; a program
// started any other way stays one process and never touches MPI.
bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

struct MpiWorld {
  bool started = false, finished = false;
  RankPlace place;
};

MpiWorld& world() {
  static MpiWorld instance = [] {
    MpiWorld w;
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0) w.place.host = name;
    if (!launched_by_mpi()) return w;
    int initialised = 0;
    check_mpi(MPI_Initialized(&initialised), "MPI_Initialized");
    if (!initialised) {
      // OpenMP threads never call MPI: only the thread that runs the trainer does.
      int provided = 0;
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
      w.started = true;
    }
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &w.place.rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &w.place.size), "MPI_Comm_size");
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.place.rank, MPI_INFO_NULL, &node),
              "MPI_Comm_split_type");
    check_mpi(MPI_Comm_rank(node, &w.place.local_rank), "MPI_Comm_rank");
    MPI_Comm_free(&node);
    return w;
  }();
  return instance;
}

class MpiCollective final : public Collective {
 public:
  MpiCollective(const RankPlace& place, bool time_waits) : place_(place), time_waits_(time_waits) {}
  int rank() const override { return place_.rank; }
  int size() const override { return place_.size; }
  void all_reduce_sum(Span<float> values, const Stream& stream) const override {
    sum(values.data, values.size, MPI_FLOAT, values.device, stream);
  }
  void all_reduce_sum(Span<double> values, const Stream& stream) const override {
    sum(values.data, values.size, MPI_DOUBLE, values.device, stream);
  }
  bool any(bool flag) const override {
    int value = flag ? 1 : 0;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD), "MPI_Allreduce");
    return value != 0;
  }
  double communication_seconds() const override { return seconds_; }
  double waiting_seconds() const override { return waiting_; }
  std::string describe() const override {
    return "MPI rank " + std::to_string(place_.rank) + " of " + std::to_string(place_.size) + " (" + place_.host + ")";
  }

 private:
  void sum(void* data, std::int64_t count, MPI_Datatype type, Device device, const Stream& stream) const {
    SURGE_CHECK(device.is_cpu() && stream.device().is_cpu(), "MPI sums host memory; device memory goes through NCCL");
    const auto start = std::chrono::steady_clock::now();
    if (time_waits_) {
      check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
      waiting_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    int size = 0;
    MPI_Type_size(type, &size);
    char* bytes = static_cast<char*>(data);
    for (std::int64_t done = 0; done < count;) {
      const int part = static_cast<int>(std::min<std::int64_t>(count - done, INT_MAX));
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, bytes + done * size, part, type, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
      done += part;
    }
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  RankPlace place_;
  bool time_waits_;
  mutable double seconds_ = 0.0, waiting_ = 0.0;
};

}  // namespace

RankPlace rank_place() { return world().place; }

std::unique_ptr<Collective> open_collective(Device device, bool time_waits) {
  const RankPlace& place = world().place;
  if (place.size == 1) return open_single_process();
  if (device.is_cpu()) return std::make_unique<MpiCollective>(place, time_waits);
  return open_nccl(device, place);
}

void finish_ranks() {
  MpiWorld& w = world();
  if (!w.started || w.finished) return;
  w.finished = true;
  check_mpi(MPI_Finalize(), "MPI_Finalize");
}

std::string mpi_library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "MPI (version unknown)";
  std::string line(text, static_cast<std::size_t>(length));
  line = line.substr(0, line.find_first_of(",\n"));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\0')) line.pop_back();
  return line;
}

}  // namespace surge::rl
