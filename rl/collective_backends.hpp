#pragma once
// Between the collective's files (rl/collective*.cpp): the backends open_collective() picks from.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "rl/collective.hpp"

namespace surge::rl {

std::unique_ptr<Collective> open_single_process();
// What set_rank_timeout() set.
struct RankTimeout {
  double seconds = 60.0;
  std::string command = "surge";
  bool paused = false;  // RankTimeoutPause
};
RankTimeout& rank_timeout();
// NCCL between the GPUs of the ranks, its unique id sent from rank 0 with MPI_Bcast (rl/collective_nccl.cpp).
std::unique_ptr<Collective> open_nccl(Device device, const RankPlace& place);
#ifdef SURGE_WITH_MPI
// Collective::gather over MPI's world (rl/collective_mpi.cpp), for the NCCL collective too.
std::vector<std::vector<std::byte>> mpi_gather(const std::vector<std::byte>& bytes, const RankPlace& place);
#endif

}  // namespace surge::rl
