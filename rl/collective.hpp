#pragma once
// Data-parallel training's one primitive: element-wise sums across the processes (ranks) of a run,
// enqueued on the learner's stream. A run launched by mpirun, in a build with MPI, has one rank per
// process (MPI_Allreduce on the CPU, ncclAllReduce between GPUs, captured in the CUDA graph); every other
// run is one rank, and its sums are the values themselves.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/device.hpp"
#include "sim/memory.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Replaces `values` (memory of the stream's device) with their element-wise sums over the ranks; every
  // rank gets the same sums. On the CPU the sums are there when it returns; on CUDA it only enqueues.
  virtual void all_reduce_sum(Span<float> values, const Stream& stream) const = 0;
  virtual void all_reduce_sum(Span<double> values, const Stream& stream) const = 0;
  // On the host, now (it waits for every rank): whether `flag` is true on any rank.
  virtual bool any(bool flag) const = 0;
  // On the host, now (every rank calls it): rank 0 gets every rank's `bytes`, by rank (its own first);
  // the other ranks get an empty list. Checkpoints gather each rank's environments so.
  virtual std::vector<std::vector<std::byte>> gather(const std::vector<std::byte>& bytes) const = 0;
  // Host seconds spent in all_reduce_sum so far, waiting for the other ranks included (CPU only: on
  // CUDA the sums run on the stream, out of the host's sight, and this stays 0). Of those, the seconds
  // spent waiting for the slowest rank to arrive, where the collective was opened to tell them apart.
  virtual double communication_seconds() const { return 0.0; }
  virtual double waiting_seconds() const { return 0.0; }
  // "1 process", "MPI rank 1 of 2 (host a)", ...
  virtual std::string describe() const = 0;
};

// One process: rank 0 of 1.
const Collective& single_process();

// Where this process sits in the run. Launched by an MPI launcher (mpirun sets OMPI_COMM_WORLD_SIZE,
// PMI_SIZE or PMIX_RANK) in a build with MPI, the first call initialises MPI; otherwise rank 0 of 1.
struct RankPlace {
  int rank = 0;
  int size = 1;
  int local_rank = 0;  // among the ranks on this machine: picks the GPU
  std::string host;
};
RankPlace rank_place();

// The collective for a learner on `device`: single_process() for one rank; MPI for CPU devices and NCCL
// for CUDA ones (bootstrapped through MPI) otherwise. Throws InputError when the build lacks what the
// device needs (NCCL for CUDA). With `time_waits` (benchmarks), the CPU's sums start with a barrier,
// timed apart, so that waiting_seconds() tells the wait for other ranks from the transfer.
std::unique_ptr<Collective> open_collective(Device device, bool time_waits = false);

// Under mpirun: how long a rank waits in a collective (a sum, the stop flag, a gather) for the others
// before it ends the job, with one line from `command` ("surge train") naming the ranks that did not
// arrive and their hosts (MPI_Abort; on NCCL the communicator is aborted first). 60 s until set.
void set_rank_timeout(double seconds, const std::string& command);

// While an active one lives, this rank's waits in collectives have no deadline: the waits for rank 0's own
// long work (an evaluation, a checkpoint written), which the rank timeout is not meant to bound.
class RankTimeoutPause {
 public:
  explicit RankTimeoutPause(bool active);
  ~RankTimeoutPause();
  RankTimeoutPause(const RankTimeoutPause&) = delete;
  RankTimeoutPause& operator=(const RankTimeoutPause&) = delete;

 private:
  bool previous_;
};

// Ends MPI, if this process started it, once every rank has finished its work (every rank must call it).
// A process that ends without calling it (after an error) leaves MPI as it is: the launcher then stops
// the other ranks rather than letting them wait forever.
void finish_ranks();

// For `surge doctor`: the MPI library this build uses ("Open MPI v4.1.4, ..."), "" without MPI; and
// whether NCCL is compiled in.
std::string mpi_library();
bool nccl_compiled();

}  // namespace surge::rl
