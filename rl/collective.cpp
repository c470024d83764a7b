// The one-process collective, and what a build without MPI says about ranks.
#include "rl/collective.hpp"

#include <unistd.h>

#include "rl/collective_backends.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

class SingleProcess final : public Collective {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(Span<float>, const Stream&) const override {}
  void all_reduce_sum(Span<double>, const Stream&) const override {}
  bool any(bool flag) const override { return flag; }
  std::vector<std::vector<std::byte>> gather(const std::vector<std::byte>& bytes) const override { return {bytes}; }
  std::string describe() const override { return "1 process"; }
};

}  // namespace

const Collective& single_process() {
  static const SingleProcess one;
  return one;
}

std::unique_ptr<Collective> open_single_process() { return std::make_unique<SingleProcess>(); }

RankTimeout& rank_timeout() {
  static RankTimeout timeout;
  return timeout;
}

void set_rank_timeout(double seconds, const std::string& command) {
  rank_timeout().seconds = seconds;
  rank_timeout().command = command;
}

RankTimeoutPause::RankTimeoutPause(bool active) : previous_(rank_timeout().paused) {
  rank_timeout().paused = previous_ || active;
}
RankTimeoutPause::~RankTimeoutPause() { rank_timeout().paused = previous_; }

#ifndef SURGE_WITH_NCCL
std::unique_ptr<Collective> open_nccl(Device device, const RankPlace&) {
  throw InputError("training on " + device.str() +
                   " across MPI ranks needs NCCL, and this build has none; install NCCL (libnccl-dev) and rebuild, "
                   "or train with --device cpu");
}
bool nccl_compiled() { return false; }
#endif

#ifndef SURGE_WITH_MPI
RankPlace rank_place() {
  RankPlace place;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) place.host = name;
  return place;
}
std::unique_ptr<Collective> open_collective(Device, bool) { return open_single_process(); }
void finish_ranks() {}
std::string mpi_library() { return ""; }
#endif

}  // namespace surge::rl
