// MPI's world as the run's collective: MPI_Allreduce on the CPU, and the launch, ranks and shutdown
// for NCCL on CUDA. Compiled when CMake finds MPI (SURGE_WITH_MPI).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <thread>
#include <vector>

#include "rl/collective.hpp"
#include "rl/collective_backends.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"

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

constexpr int kGatherTag = 7301, kStalledTag = 7302;

struct MpiWorld {
  bool started = false, finished = false;
  RankPlace place;
  std::vector<std::string> hosts;  // [size]: every rank's, for the line that names a rank that stalled
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
    std::vector<char> names(static_cast<std::size_t>(w.place.size) * sizeof name);
    check_mpi(MPI_Allgather(name, sizeof name, MPI_CHAR, names.data(), sizeof name, MPI_CHAR, MPI_COMM_WORLD),
              "MPI_Allgather");
    for (int r = 0; r < w.place.size; ++r) w.hosts.emplace_back(names.data() + r * sizeof name);
    return w;
  }();
  return instance;
}

using Clock = std::chrono::steady_clock;

// A collective that outlived the rank timeout: this rank tells every other that it is waiting and
// listens for the same word from them for a short while; those it does not hear from did not arrive.
// The lowest rank that did says so in one line, and the job ends.
[[noreturn]] void stalled(const char* what) {
  const MpiWorld& w = world();
  const RankTimeout& timeout = rank_timeout();
  const int me = w.place.rank;
  std::vector<MPI_Request> sends;
  int word = me;
  for (int r = 0; r < w.place.size; ++r)
    if (r != me) MPI_Isend(&word, 1, MPI_INT, r, kStalledTag, MPI_COMM_WORLD, &sends.emplace_back());
  std::vector<bool> arrived(w.place.size, false);
  arrived[me] = true;
  const auto until = Clock::now() + std::chrono::duration<double>(std::min(timeout.seconds, 2.0));
  while (Clock::now() < until && std::find(arrived.begin(), arrived.end(), false) != arrived.end()) {
    for (int r = 0; r < w.place.size; ++r) {
      int heard = 0, from = 0;
      if (arrived[r] || MPI_Iprobe(r, kStalledTag, MPI_COMM_WORLD, &heard, MPI_STATUS_IGNORE) != MPI_SUCCESS || !heard)
        continue;
      MPI_Recv(&from, 1, MPI_INT, r, kStalledTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      arrived[r] = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string missing;
  int count = 0;
  for (int r = 0; r < w.place.size; ++r)
    if (!arrived[r]) missing += std::string(count++ ? ", " : "") + std::to_string(r) + " (" + w.hosts[r] + ")";
  const int reporter = static_cast<int>(std::find(arrived.begin(), arrived.end(), true) - arrived.begin());
  if (me == reporter) {
    std::cerr << timeout.command << ": "
              << (count ? std::string(count > 1 ? "ranks " : "rank ") + missing + " did not arrive at " + what
                        : "every rank waits at " + std::string(what) + ", yet the sum did not complete")
              << " within " << format_shortest(timeout.seconds) << " s (rank_timeout_s); rank " << me << " ("
              << w.hosts[me] << ") stops the job" << std::endl;
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(2));  // the reporting rank speaks first
  }
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

// Waits for a request of the collective called `what`, at most the rank timeout.
void await(MPI_Request& request, const char* what) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(rank_timeout().seconds);
  for (unsigned polls = 1;; ++polls) {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    if (polls % 256 == 0) {
      if (!rank_timeout().paused && Clock::now() > deadline) stalled(what);
      std::this_thread::yield();  // ranks may share cores (mpirun --oversubscribe)
    }
  }
}

// Point to point, in pieces MPI's int counts can hold.
void transfer(std::byte* bytes, std::uint64_t count, int peer, bool send) {
  for (std::uint64_t done = 0; done < count;) {
    const int part = static_cast<int>(std::min<std::uint64_t>(count - done, INT_MAX));
    MPI_Request request = MPI_REQUEST_NULL;
    if (send)
      check_mpi(MPI_Isend(bytes + done, part, MPI_BYTE, peer, kGatherTag, MPI_COMM_WORLD, &request), "MPI_Isend");
    else
      check_mpi(MPI_Irecv(bytes + done, part, MPI_BYTE, peer, kGatherTag, MPI_COMM_WORLD, &request), "MPI_Irecv");
    await(request, "the gather of every rank's state for a checkpoint");
    done += static_cast<std::uint64_t>(part);
  }
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
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD, &request), "MPI_Iallreduce");
    await(request, "the iteration's stop flag");
    return value != 0;
  }
  std::vector<std::vector<std::byte>> gather(const std::vector<std::byte>& bytes) const override {
    return mpi_gather(bytes, place_);
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
    MPI_Request request = MPI_REQUEST_NULL;
    if (time_waits_) {
      check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
      await(request, "a sum across the ranks");
      waiting_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    int size = 0;
    MPI_Type_size(type, &size);
    char* bytes = static_cast<char*>(data);
    for (std::int64_t done = 0; done < count;) {
      const int part = static_cast<int>(std::min<std::int64_t>(count - done, INT_MAX));
      check_mpi(MPI_Iallreduce(MPI_IN_PLACE, bytes + done * size, part, type, MPI_SUM, MPI_COMM_WORLD, &request),
                "MPI_Iallreduce");
      await(request, "a sum across the ranks");
      done += part;
    }
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  RankPlace place_;
  bool time_waits_;
  mutable double seconds_ = 0.0, waiting_ = 0.0;
};

}  // namespace

std::vector<std::vector<std::byte>> mpi_gather(const std::vector<std::byte>& bytes, const RankPlace& place) {
  if (place.rank != 0) {
    std::uint64_t count = bytes.size();
    transfer(reinterpret_cast<std::byte*>(&count), sizeof count, 0, true);
    transfer(const_cast<std::byte*>(bytes.data()), count, 0, true);
    return {};
  }
  std::vector<std::vector<std::byte>> all(static_cast<std::size_t>(place.size));
  all[0] = bytes;
  for (int peer = 1; peer < place.size; ++peer) {
    std::uint64_t count = 0;
    transfer(reinterpret_cast<std::byte*>(&count), sizeof count, peer, false);
    all[peer].resize(count);
    transfer(all[peer].data(), count, peer, false);
  }
  return all;
}

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
