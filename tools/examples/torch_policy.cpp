// A libtorch program that drives Surge's environments through zero-copy tensors. A policy written in
// torch ops reads the observations in Surge's step buffers and writes its actions into Surge's action
// buffer; Surge steps every environment and writes the next observations, rewards and flags in place,
// where torch reads them. Nothing is copied between the two: every tensor below is a view of Surge's
// memory.
//
//   torch_policy [--scenario cartpole] [--device cpu|cuda] [--num-envs 4096] [--steps 256] [--seed 1]
//
// It keeps its own account of the finished episodes, in torch ops on Surge's reward and flag tensors,
// and checks it against the engine's episode statistics (exit code 1 if they differ).
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "interop/torch.hpp"
#include "interop/torch_stream.hpp"
#include "scenarios/registry.hpp"
#include "sim/device.hpp"
#include "sim/engine.hpp"
#include "sim/engine_views.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "sim/stream.hpp"
#include "tools/cli/args.hpp"

namespace {

using namespace surge;

int run(const std::vector<std::string>& args) {
  cli::Command command("torch_policy", "drive Surge's environments with a torch policy, through zero-copy tensors");
  command.option("scenario", "NAME", "a discrete-action scenario", "cartpole")
      .option("device", "DEVICE", "cpu, cuda, cuda:N or auto", "cpu")
      .option("num-envs", "N", "environments stepped together", "4096")
      .option("steps", "T", "steps of every environment", "256")
      .option("seed", "S", "seeds the environments and torch", "1");
  if (!command.parse(args)) return 0;
  const std::string name = command.get("scenario");
  const ScenarioSpec& spec = scenario_spec(name);
  if (spec.action_kind != ActionKind::Discrete)
    throw InputError("torch_policy: scenario '" + name +
                     "' has continuous actions; this example samples discrete ones (cartpole, mountain_car, acrobot)");
  const Device device = choose_device(command.get("device")).device;
  const std::int64_t num_envs = command.get_int("num-envs", 1, std::int64_t{1} << 26);
  const std::int64_t steps = command.get_int("steps", 1, std::int64_t{1} << 30);
  const std::uint64_t seed = command.get_u64("seed");
  const std::int64_t obs_dim = spec.obs_dim;

  std::unique_ptr<Engine> engine = make_engine(name, device, num_envs, seed);
  auto buffers = std::make_shared<StepBuffers>(device, num_envs, spec.obs_dim);
  Stream stream(device);
  // Torch's ops go onto Surge's stream (on CUDA), so they and Surge's steps run in the order written
  // below without any synchronisation in between.
  interop::TorchStreamGuard on_surge_stream(stream);

  // The step buffers as tensors over Surge's memory; each keeps the buffers alive.
  auto step = interop::to_torch(step_tensor_views(spec, buffers->views()), buffers);
  const at::Tensor obs = step["obs"];                // [N][obs_dim] float32
  const at::Tensor reward = step["reward"];          // [N] float32
  const at::Tensor terminated = step["terminated"];  // [N] uint8 0/1
  const at::Tensor truncated = step["truncated"];    // [N] uint8 0/1
  at::Tensor actions = interop::to_torch(action_tensor_view(spec, buffers->action_view()), buffers);  // [N] int32
  SURGE_CHECK(obs.data_ptr() == buffers->obs.data() && actions.data_ptr() == buffers->actions.data(),
              "the tensors are not views of Surge's buffers");

  // The first observations: Surge writes them into memory handed over by from_torch (checked: dtype,
  // device, shape, contiguity).
  engine->observe(interop::span_from_torch<float>(obs, device, {num_envs, obs_dim}, "obs"), stream);
  engine->clear_episode_stats(stream);

  torch::manual_seed(seed);
  torch::nn::Sequential policy(torch::nn::Linear(obs_dim, 64), torch::nn::Tanh(),
                               torch::nn::Linear(64, spec.num_actions));
  const at::Device torch_device = interop::torch_device(device);
  policy->to(torch_device);
  torch::NoGradGuard no_grad;

  const auto on_device = torch::TensorOptions().device(torch_device);
  at::Tensor running_return = torch::zeros({num_envs}, on_device.dtype(torch::kFloat32));
  at::Tensor finished_return_sum = torch::zeros({}, on_device.dtype(torch::kFloat64));
  at::Tensor finished_episodes = torch::zeros({}, on_device.dtype(torch::kInt64));

  const auto started = std::chrono::steady_clock::now();
  for (std::int64_t t = 0; t < steps; ++t) {
    // Torch reads Surge's observations and writes its actions into Surge's action buffer.
    const at::Tensor logits = policy->forward(obs);
    actions.copy_(torch::multinomial(torch::softmax(logits, -1), 1).squeeze(1));
    // Surge steps with those actions and writes the next observations, rewards and flags in place.
    engine->step(buffers->action_view(), buffers->views(), stream);
    // Torch reads them: the return of every episode that ended at this step.
    running_return += reward;
    const at::Tensor ended = (terminated + truncated) > 0;
    // (where, not masked_select: the latter waits for the device to learn its output's size)
    finished_return_sum +=
        torch::where(ended, running_return, torch::zeros_like(running_return)).to(torch::kFloat64).sum();
    finished_episodes += ended.sum();
    running_return.masked_fill_(ended, 0.0f);
  }
  stream.synchronize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  const EpisodeStats surge_stats = engine->episode_stats(stream);
  const double torch_episodes = static_cast<double>(finished_episodes.item<std::int64_t>());
  const double torch_mean = torch_episodes > 0 ? finished_return_sum.item<double>() / torch_episodes : 0.0;
  const double env_steps = static_cast<double>(num_envs * steps);
  std::printf("%s on %s: %lld envs x %lld steps in %.3f s (%.4g env-steps/s, policy included)\n", name.c_str(),
              device.str().c_str(), static_cast<long long>(num_envs), static_cast<long long>(steps), seconds,
              env_steps / seconds);
  std::printf("episodes finished: %.0f (torch) %.0f (Surge); mean return: %.6f (torch) %.6f (Surge)\n", torch_episodes,
              surge_stats.episodes, torch_mean, surge_stats.mean_return());
  const bool agree = torch_episodes == surge_stats.episodes && std::fabs(torch_mean - surge_stats.mean_return()) <=
                                                                   1e-9 + 1e-9 * std::fabs(surge_stats.mean_return());
  if (!agree) {
    std::fprintf(stderr, "torch_policy: torch's account of the episodes differs from Surge's\n");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const surge::InputError& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "torch_policy: %s\n", error.what());
    return 1;
  }
}
