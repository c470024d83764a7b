// The NCCL path on one GPU: a communicator of one rank, its all-reduce enqueued on a stream and
// captured in a CUDA graph between two kernels, the graph replayed. (Two or more ranks run under
// mpirun on a machine with several GPUs; tests/support/check_mpi.py covers the CPU's ranks.)
#include <catch2/catch.hpp>

#include <vector>

#include "rl/collective_backends.hpp"
#include "rl/device_graph.hpp"
#include "rl/trainer_kernels.hpp"
#include "sim/memory.hpp"

using namespace surge;

TEST_CASE("an NCCL all-reduce runs inside a captured CUDA graph", "[collective][gpu]") {
  const Device gpu = Device::cuda(0);
  Stream stream(gpu);
  const auto nccl = rl::open_nccl(gpu, rl::RankPlace{0, 1, 0, "this machine"});
  REQUIRE(nccl->size() == 1);
  const std::int64_t count = 4099;  // not a multiple of anything NCCL chunks by
  std::vector<float> start(count);
  for (std::int64_t k = 0; k < count; ++k) start[k] = 0.25f * static_cast<float>(k % 97) - 3.0f;
  DeviceBuffer<float> values(gpu, count);
  from_host(values.span(), start, stream);
  DeviceBuffer<double> sums(gpu, 3);
  from_host(sums.span(), std::vector<double>{1.5, -2.0, 1e-300}, stream);

  rl::IterationGraph graph(stream);
  graph.capture([&] {
    rl::scale_values(stream, values.span().data, count, 2.0f);
    nccl->all_reduce_sum(values.span(), stream);  // one rank: the sum is the value
    nccl->all_reduce_sum(sums.span(), stream);
    rl::scale_values(stream, values.span().data, count, 0.5f);
    rl::scale_values(stream, values.span().data, count, 3.0f);
  });
  graph.launch();
  graph.launch();
  const std::vector<float> after = to_host(values.span(), stream);
  for (std::int64_t k = 0; k < count; ++k) REQUIRE(after[k] == start[k] * 9.0f);
  CHECK(to_host(sums.span(), stream) == std::vector<double>{1.5, -2.0, 1e-300});
}
