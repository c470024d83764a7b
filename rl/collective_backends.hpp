#pragma once
// Between the collective's files (rl/collective*.cpp): the backends open_collective() picks from.
#include <memory>

#include "rl/collective.hpp"

namespace surge::rl {

std::unique_ptr<Collective> open_single_process();
// NCCL between the GPUs of the ranks, its unique id sent from rank 0 with MPI_Bcast (rl/collective_nccl.cpp).
std::unique_ptr<Collective> open_nccl(Device device, const RankPlace& place);

}  // namespace surge::rl
