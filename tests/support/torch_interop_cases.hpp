#pragma once
// libtorch interop (interop/torch.hpp) on one device, shared by the CPU and the GPU test: writes seen
// across the boundary in both directions, the shapes and strides of every exported field, an engine
// driven by torch against one driven by Surge alone, the parameter views against Surge's own forward
// pass, DLPack against torch's own converter, lifetimes, and every error path.
//
// torch's DLPack header must come before Surge's: both guard themselves with DLPACK_DLPACK_H_, and
// libtorch's own functions need its (possibly newer) version, of which Surge uses only the common part.
#include <ATen/DLConvertor.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "interop/dlpack.hpp"
#include "interop/torch.hpp"
#include "interop/torch_stream.hpp"
#include "rl/actor_critic.hpp"
#include "scenarios/registry.hpp"
#include "sim/engine_views.hpp"
#include "sim/memory.hpp"
#include "sim/stream.hpp"
#include "sim/tensor_view.hpp"
#include "tests/support/interop_buffers.hpp"

namespace surge::testing {

struct CountedTorchOwner {
  int* destroyed;
  ~CountedTorchOwner() { ++*destroyed; }
};

inline std::vector<std::int64_t> extents_of(const TensorView& view) {
  return std::vector<std::int64_t>(view.shape.begin(), view.shape.begin() + view.rank);
}
inline std::vector<std::int64_t> strides_of_view(const TensorView& view) {
  return std::vector<std::int64_t>(view.strides.begin(), view.strides.begin() + view.rank);
}
inline std::vector<std::int64_t> to_vector(at::IntArrayRef values) {
  return std::vector<std::int64_t>(values.begin(), values.end());
}

// The InputError message `call` throws ("" if none).
template <class F>
std::string interop_error(F&& call) {
  try {
    call();
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

inline void torch_write_through(Device device) {
  Stream stream(device);
  interop::TorchStreamGuard on_surge_stream(stream);
  DeviceBuffer<float> values(device, 12);
  DeviceBuffer<std::int32_t> actions(device, 5);
  DeviceBuffer<std::uint8_t> flags(device, 6);
  std::vector<float> iota(12);
  std::iota(iota.begin(), iota.end(), 0.0f);
  from_host(values.span(), iota, stream);
  from_host(actions.span(), std::vector<std::int32_t>(5, 3), stream);
  from_host(flags.span(), std::vector<std::uint8_t>(6, 0), stream);

  at::Tensor values_t = interop::to_torch(TensorView::of(values.span(), {3, 4}));
  at::Tensor actions_t = interop::to_torch(TensorView::of(actions.span(), {5}));
  at::Tensor flags_t = interop::to_torch(TensorView::of(flags.span(), {2, 3}));
  CHECK(values_t.data_ptr() == values.data());
  CHECK(actions_t.data_ptr() == actions.data());
  CHECK(flags_t.data_ptr() == flags.data());

  // torch writes, Surge reads.
  values_t.mul_(2.0f);
  actions_t.add_(4);
  flags_t.select(1, 2).fill_(1);
  std::vector<float> doubled(12);
  for (int k = 0; k < 12; ++k) doubled[static_cast<std::size_t>(k)] = 2.0f * static_cast<float>(k);
  CHECK(to_host(values.cspan(), stream) == doubled);
  CHECK(to_host(actions.cspan(), stream) == std::vector<std::int32_t>(5, 7));
  CHECK(to_host(flags.cspan(), stream) == std::vector<std::uint8_t>{0, 0, 1, 0, 0, 1});

  // Surge writes, torch reads.
  from_host(values.span(), std::vector<float>(12, -1.5f), stream);
  CHECK(values_t.sum().item<float>() == -18.0f);
  CHECK(values_t.cpu()[2][3].item<float>() == -1.5f);

  // A tensor torch allocated, handed to Surge: Surge's writes land in torch's memory.
  at::Tensor torch_owned =
      torch::zeros({2, 4}, torch::TensorOptions().dtype(torch::kFloat32).device(interop::torch_device(device)));
  const Span<float> span = interop::span_from_torch<float>(torch_owned, device, {2, kAnyExtent}, "torch_owned");
  CHECK(span.data == torch_owned.data_ptr());
  CHECK(span.size == 8);
  from_host(span, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, stream);
  CHECK(torch_owned.sum().item<float>() == 36.0f);
}

inline void torch_every_field(Device device) {
  constexpr std::int64_t n = 7;
  ExportedFields exported(device, n, 5);
  const ScenarioSpec& spec = exported.engine->spec();
  const StepBuffers& step = exported.step;
  const std::vector<NamedTensorView> views = exported.views();
  REQUIRE(views.size() == exported.view_count());

  for (const NamedTensorView& field : views) {
    INFO(field.name);
    if (field.view.dtype == DType::UInt64) {  // rng_offsets: torch has no dtype for it
      CHECK_THAT(interop_error([&] { interop::to_torch(field.view); }),
                 Catch::Contains("torch has no dtype for uint64"));
      continue;
    }
    const at::Tensor tensor = interop::to_torch(field.view);
    CHECK(tensor.data_ptr() == field.view.data);
    CHECK(to_vector(tensor.sizes()) == extents_of(field.view));
    CHECK(to_vector(tensor.strides()) == strides_of_view(field.view));
    CHECK(tensor.scalar_type() == interop::torch_dtype(field.view.dtype));
    CHECK(tensor.device() == interop::torch_device(device));
    CHECK(tensor.is_contiguous());
    // And back: from_torch gives the very same view.
    const TensorView back = interop::from_torch(tensor, TensorSpec::like(field.view), field.name);
    CHECK(back.data == field.view.data);
    CHECK(back.shape == field.view.shape);
    CHECK(back.strides == field.view.strides);
  }

  // Named lists come out as ordered dicts with the same names, in order.
  const auto fields = interop::to_torch(step_tensor_views(spec, step.views()));
  CHECK(fields.keys() == std::vector<std::string>{"obs", "reward", "terminated", "truncated", "final_obs"});
  CHECK(fields["obs"].sizes() == at::IntArrayRef({n, spec.obs_dim}));
  CHECK(fields["obs"][1].data_ptr() == step.obs.data() + spec.obs_dim);
  CHECK(fields["terminated"].scalar_type() == at::kByte);
}

// A torch policy (push toward the pole's lean) drives one engine through tensors over its step buffers;
// the same actions drive a twin engine through Surge's buffers alone. Equal trajectories show that
// torch's actions reached Surge and Surge's observations reached torch, with nothing in between.
inline void torch_drives_engine(Device device) {
  constexpr std::int64_t steps = 40, n = 64;
  const ScenarioSpec& spec = scenario_spec("cartpole");
  const std::int64_t obs_dim = spec.obs_dim;
  std::unique_ptr<Engine> engine = make_engine("cartpole", device, n, 11);
  std::unique_ptr<Engine> twin = make_engine("cartpole", device, n, 11);
  Stream stream(device);
  interop::TorchStreamGuard on_surge_stream(stream);
  const StepBuffers step(device, n, spec.obs_dim), twin_step(device, n, spec.obs_dim);
  auto fields = interop::to_torch(step_tensor_views(spec, step.views()));
  const at::Tensor obs = fields["obs"], reward = fields["reward"];
  const at::Tensor terminated = fields["terminated"], truncated = fields["truncated"];
  at::Tensor actions = interop::to_torch(action_tensor_view(spec, step.action_view()));
  engine->observe(interop::span_from_torch<float>(obs, device, {n, obs_dim}, "obs"), stream);
  twin->observe(twin_step.obs.span(), stream);
  CHECK(obs.cpu().equal(interop::to_torch(TensorView::of(twin_step.obs.span(), {n, obs_dim})).cpu()));

  std::int64_t episodes_ended = 0;
  for (std::int64_t t = 0; t < steps; ++t) {
    const at::Tensor lean = obs.select(1, 2) + 0.5 * obs.select(1, 3);  // theta + theta_dot / 2
    actions.copy_(lean > 0);
    engine->step(step.action_view(), step.views(), stream);

    copy(twin_step.actions.span(), interop::span_from_torch<const std::int32_t>(actions, device, {n}, "actions"),
         stream);
    twin->step(twin_step.action_view(), twin_step.views(), stream);
    INFO("step " << t);
    CHECK(to_host(twin_step.obs.cspan(), stream) == to_host(step.obs.cspan(), stream));
    CHECK(obs.cpu().equal(interop::to_torch(TensorView::of(twin_step.obs.span(), {n, obs_dim})).cpu()));
    CHECK(reward.cpu().equal(interop::to_torch(TensorView::of(twin_step.reward.span(), {n})).cpu()));
    CHECK(terminated.cpu().equal(interop::to_torch(TensorView::of(twin_step.terminated.span(), {n})).cpu()));
    CHECK(truncated.cpu().equal(interop::to_torch(TensorView::of(twin_step.truncated.span(), {n})).cpu()));
    episodes_ended += terminated.sum().item<std::int64_t>();
  }
  // The lean-following policy keeps most poles up, random actions would not: the actions were used.
  CHECK(episodes_ended < n / 2);
}

// The actor's parameter views, run through torch::linear, give the logits Surge's own forward pass
// computes from the same flat buffer; gradients written through torch land in Surge's gradient buffer.
inline void torch_parameter_views(Device device) {
  constexpr std::int64_t batch = 16;
  const int obs_dim = 4, num_actions = 3;
  const rl::ActorCritic net(obs_dim, num_actions, rl::NetworkConfig{});
  const rl::ParamTable& table = net.table();
  Stream stream(device);
  interop::TorchStreamGuard on_surge_stream(stream);
  std::vector<float> host_params(static_cast<std::size_t>(table.total()));
  const std::vector<double> initial = net.initial_parameters(3);
  for (std::size_t j = 0; j < host_params.size(); ++j)
    host_params[j] = static_cast<float>(initial[j] + 0.3 * std::sin(0.7 * static_cast<double>(j)));
  DeviceBuffer<float> params(device, table.total()), grads(device, table.total());
  from_host(params.span(), host_params, stream);
  from_host(grads.span(), std::vector<float>(static_cast<std::size_t>(table.total()), 0.0f), stream);
  std::vector<float> host_obs(batch * obs_dim);
  for (std::size_t j = 0; j < host_obs.size(); ++j)
    host_obs[j] = static_cast<float>(std::cos(1.3 * static_cast<double>(j)));
  DeviceBuffer<float> obs(device, batch * obs_dim), logits(device, batch * num_actions);
  from_host(obs.span(), host_obs, stream);

  rl::PpoGradient<float> workspace(device, net, batch);
  workspace.forward_actor(stream, params.data(), obs.data(), batch, logits.data());
  const std::vector<float> surge_logits = to_host(logits.cspan(), stream);

  auto weights = interop::to_torch(table.tensor_views(params.span()));
  at::Tensor x = interop::to_torch(TensorView::of(obs.span(), {batch, obs_dim}));
  const int layers = net.actor().num_layers();
  for (int l = 0; l < layers; ++l) {
    const std::string prefix = "actor." + std::to_string(l);
    x = torch::linear(x, weights[prefix + ".weight"], weights[prefix + ".bias"].flatten());
    if (l + 1 < layers) x = torch::tanh(x);
  }
  const at::Tensor torch_logits = x.cpu().contiguous();
  REQUIRE(torch_logits.numel() == static_cast<std::int64_t>(surge_logits.size()));
  for (std::size_t k = 0; k < surge_logits.size(); ++k) {
    const float reference = surge_logits[k];
    CHECK(std::fabs(torch_logits.data_ptr<float>()[k] - reference) <= 1e-5 + 1e-5 * std::fabs(reference));
  }

  // A gradient written through torch is at the slice's offset in Surge's flat gradient buffer.
  auto gradients = interop::to_torch(table.tensor_views(grads.span()));
  const rl::ParamSlice& head = table[table.find("critic." + std::to_string(net.critic().num_layers() - 1) + ".weight")];
  gradients[head.name].fill_(0.25f);
  const std::vector<float> host_grads = to_host(grads.cspan(), stream);
  double total = 0.0;
  for (float g : host_grads) total += g;
  CHECK(total == 0.25 * static_cast<double>(head.size()));
  CHECK(host_grads[static_cast<std::size_t>(head.offset)] == 0.25f);
  CHECK(host_grads[static_cast<std::size_t>(head.offset + head.size() - 1)] == 0.25f);
}

inline void torch_lifetime(Device device) {
  int destroyed = 0;
  auto buffer = std::make_shared<DeviceBuffer<float>>(device, 6);
  const TensorView view = TensorView::of(buffer->span(), {2, 3});
  {
    auto owner = std::shared_ptr<CountedTorchOwner>(new CountedTorchOwner{&destroyed});
    at::Tensor tensor = interop::to_torch(view, owner);
    owner.reset();
    at::Tensor row = tensor[1];              // shares the storage
    at::Tensor reshaped = tensor.view({6});  // and so does this
    tensor.reset();
    CHECK(destroyed == 0);
    row.reset();
    CHECK(destroyed == 0);
    CHECK(reshaped.data_ptr() == buffer->data());
  }
  CHECK(destroyed == 1);  // released once, with the last tensor

  // The buffer itself as the owner: it outlives every reference but the tensor's.
  std::weak_ptr<DeviceBuffer<float>> watch = buffer;
  {
    auto fields = interop::to_torch(std::vector<NamedTensorView>{{"a", view}, {"b", view}}, buffer);
    buffer.reset();
    CHECK_FALSE(watch.expired());
    fields["a"].fill_(2.0f);
  }
  CHECK(watch.expired());

  // Without an owner the tensor borrows: dropping it leaves Surge's memory alone.
  Stream stream(device);
  interop::TorchStreamGuard on_surge_stream(stream);
  DeviceBuffer<float> borrowed(device, 4);
  { interop::to_torch(TensorView::of(borrowed.span(), {4})).fill_(3.0f); }
  CHECK(to_host(borrowed.cspan(), stream) == std::vector<float>(4, 3.0f));
}

inline void torch_error_paths(Device device) {
  const auto options = torch::TensorOptions().device(interop::torch_device(device));
  const std::string where = device.str();
  const TensorSpec actions{DType::Int32, device, {8}};
  const std::string expected = "actions: expected contiguous int32[8] on " + where + ", got ";
  CHECK(interop_error([&] {
          interop::from_torch(torch::zeros({8}, options.dtype(torch::kInt64)), actions, "actions");
        }) == expected + "int64[8] on " + where + " (dtype differs)");
  CHECK(interop_error([&] {
          interop::from_torch(torch::zeros({8}, options.dtype(torch::kHalf)), actions, "actions");
        }) == expected + "a Half tensor (dtype differs; Surge takes float32, float64, int32, int64 and uint8)");
  CHECK(interop_error([&] {
          interop::from_torch(torch::zeros({8}, options.dtype(torch::kBool)), actions, "actions");
        }) == expected + "a Bool tensor (dtype differs; Surge takes float32, float64, int32, int64 and uint8)");
  CHECK(interop_error([&] {
          interop::from_torch(torch::zeros({9}, options.dtype(torch::kInt32)), actions, "actions");
        }) == expected + "int32[9] on " + where + " (extent of dimension 0 differs)");
  CHECK(interop_error([&] {
          interop::from_torch(torch::zeros({2, 4}, options.dtype(torch::kInt32)), actions, "actions");
        }) == expected + "int32[2][4] on " + where + " (rank differs)");
  CHECK(interop_error([&] {
          interop::from_torch(torch::zeros({1, 1, 1, 1, 8}, options.dtype(torch::kInt32)), actions, "actions");
        }) == expected + "a tensor of rank 5 (rank differs)");
  CHECK(interop_error([&] { interop::from_torch(at::Tensor(), actions, "actions"); }) ==
        expected + "an undefined tensor");
  const at::Tensor every_other = torch::zeros({16}, options.dtype(torch::kInt32)).slice(0, 0, 16, 2);
  CHECK(interop_error([&] { interop::from_torch(every_other, actions, "actions"); }) ==
        expected + "int32[8] on " + where + " with strides (2) (not contiguous (make a contiguous copy first))");
  const at::Tensor transposed = torch::zeros({4, 2}, options.dtype(torch::kFloat32)).t();
  CHECK(interop_error([&] {
          interop::from_torch(transposed, {DType::Float32, device, {2, 4}}, "obs");
        }) == "obs: expected contiguous float32[2][4] on " + where + ", got float32[2][4] on " + where +
                  " with strides (1, 2) (not contiguous (make a contiguous copy first))");
  if (device.is_cpu()) {
    const at::Tensor sparse = torch::zeros({8}, options.dtype(torch::kInt32)).to_sparse();
    CHECK(interop_error([&] { interop::from_torch(sparse, actions, "actions"); }) ==
          expected + "a Sparse tensor (only dense, strided tensors can be shared)");
  }
  // A tensor on the other device than the one Surge expects.
  const Device other = device.is_cuda() ? Device::cpu() : Device::cuda(0);
  CHECK(interop_error([&] {
          interop::from_torch(torch::zeros({8}, options.dtype(torch::kInt32)), {DType::Int32, other, {8}}, "actions");
        }) ==
        "actions: expected contiguous int32[8] on " + other.str() + ", got int32[8] on " + where + " (device differs)");

  // Exports torch cannot represent.
  DeviceBuffer<std::uint64_t> offsets(device, 4);
  CHECK_THAT(interop_error([&] { interop::to_torch(TensorView::of(offsets.span(), {4})); }),
             Catch::StartsWith("to_torch: torch has no dtype for uint64"));
  if (!at::hasCUDA()) {
    DeviceBuffer<float> values(device, 4);
    TensorView on_gpu = TensorView::of(values.span(), {4});
    on_gpu.device = Device::cuda(0);
    CHECK(interop_error([&] { interop::to_torch(on_gpu); }) ==
          "to_torch: the view is on cuda:0 but this libtorch has no CUDA; build against a CUDA-enabled libtorch "
          "(SURGE_TORCH_PREFIX)");
  }
}

// Our DLPack export read by torch's own converter, and torch's export read by ours.
inline void dlpack_with_torch(Device device) {
  int destroyed = 0;
  auto buffer = std::make_shared<DeviceBuffer<float>>(device, 24);
  const TensorView view = TensorView::of(buffer->span(), {2, 3, 4});
  {
    auto owner = std::shared_ptr<CountedTorchOwner>(new CountedTorchOwner{&destroyed});
    at::Tensor tensor = at::fromDLPack(interop::to_dlpack(view, owner));
    owner.reset();
    CHECK(tensor.data_ptr() == buffer->data());
    CHECK(to_vector(tensor.sizes()) == std::vector<std::int64_t>{2, 3, 4});
    CHECK(to_vector(tensor.strides()) == std::vector<std::int64_t>{12, 4, 1});
    CHECK(tensor.scalar_type() == at::kFloat);
    CHECK(tensor.device() == interop::torch_device(device));
    CHECK(destroyed == 0);
  }
  CHECK(destroyed == 1);  // torch called our deleter, once

  // torch's export, imported by us: its deleter (wrapped here to count) runs once, when ours goes.
  const at::Tensor source =
      torch::arange(10, torch::TensorOptions().dtype(torch::kInt64).device(interop::torch_device(device))).view({2, 5});
  const auto references = [&] { return source.use_count() + source.storage().use_count(); };
  const auto before = references();
  struct CountingDeleter {
    void* context;
    void (*deleter)(DLManagedTensor*);
    int* calls;
  };
  int torch_deleter_calls = 0;
  DLManagedTensor* exported = at::toDLPack(source);
  exported->manager_ctx = new CountingDeleter{exported->manager_ctx, exported->deleter, &torch_deleter_calls};
  exported->deleter = [](DLManagedTensor* self) {
    auto* counting = static_cast<CountingDeleter*>(self->manager_ctx);
    ++*counting->calls;
    self->manager_ctx = counting->context;
    self->deleter = counting->deleter;
    delete counting;
    self->deleter(self);
  };
  {
    const interop::DlpackTensor imported = interop::from_dlpack(exported, {DType::Int64, device, {2, 5}}, "source");
    CHECK(imported.view().data == source.data_ptr());
    CHECK(imported.view().strides[0] == 5);
    CHECK(references() > before);  // torch's export holds the tensor
    CHECK(torch_deleter_calls == 0);
  }
  CHECK(torch_deleter_calls == 1);
  CHECK(references() == before);  // and our import let it go
}

}  // namespace surge::testing
