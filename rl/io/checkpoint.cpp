#include "rl/io/checkpoint.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "rl/actor_critic.hpp"
#include "rl/io/checkpoint_file.hpp"
#include "rl/io/hdf5_util.hpp"
#include "rl/trainer.hpp"
#include "sim/engine.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"

namespace surge::rl {
namespace {

constexpr const char* kFormat = "surge-checkpoint";
constexpr std::int64_t kFormatVersion = 1;
// Bounds of what a checkpoint may claim, far beyond any scenario's.
constexpr std::int64_t kMaxObsDim = 1 << 16;
constexpr std::int64_t kMaxActions = 1 << 16;
constexpr std::int64_t kMaxActionDim = 64;
constexpr std::int64_t kMaxCount = std::int64_t(1) << 62;
constexpr std::int64_t kMaxTotalSteps = std::int64_t(1) << 50;  // as TrainConfig allows

hdf5::Handle create_group(hid_t parent, const std::string& name) {
  return hdf5::Handle(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create group " + name);
}

// A bias is stored [out], as PyTorch keeps it; files of the first release hold it [out][1].
bool is_bias(const ParamSlice& slice) {
  const std::string suffix = ".bias";
  return slice.cols == 1 && slice.name.size() > suffix.size() &&
         slice.name.compare(slice.name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<hsize_t> stored_shape(const ParamSlice& slice) {
  if (is_bias(slice)) return {static_cast<hsize_t>(slice.rows)};
  return {static_cast<hsize_t>(slice.rows), static_cast<hsize_t>(slice.cols)};
}

// One dataset per slice under `group`, from a flat buffer laid out by `table`.
void write_slices(hid_t group, const ParamTable& table, const std::vector<float>& flat) {
  for (const ParamSlice& slice : table.slices())
    checkpoint_file::write(group, slice.name, stored_shape(slice), flat.data() + slice.offset);
}

// Refuses a value that is not finite (or negative, where it must not be), naming the dataset and index.
void require_finite(const checkpoint_file::Reader& file, const std::string& name, const float* values,
                    std::int64_t count, bool non_negative) {
  for (std::int64_t k = 0; k < count; ++k)
    if (!std::isfinite(values[k]) || (non_negative && values[k] < 0))
      file.damaged("dataset '" + name + "' holds " + format_precise(values[k]) + " at index " + std::to_string(k) +
                   " where a finite" + (non_negative ? " non-negative" : "") + " number is expected");
}

std::vector<float> read_slices(const checkpoint_file::Reader& file, const std::string& group, const ParamTable& table,
                               bool non_negative) {
  std::vector<float> flat(static_cast<std::size_t>(table.total()), 0.0f);
  for (const ParamSlice& slice : table.slices()) {
    const std::string name = group + "/" + slice.name;
    std::vector<std::vector<hsize_t>> shapes{stored_shape(slice)};
    if (is_bias(slice)) shapes.push_back({static_cast<hsize_t>(slice.rows), 1});
    file.read_into(name, shapes, flat.data() + slice.offset);
    require_finite(file, name, flat.data() + slice.offset, slice.size(), non_negative);
  }
  return flat;
}

// Running moments [2*dim + 1] as <prefix>_mean [dim], <prefix>_var [dim] and attribute <prefix>_count.
void write_moments(hid_t group, const std::string& prefix, const std::vector<double>& moments) {
  const hsize_t dim = (moments.size() - 1) / 2;
  checkpoint_file::write(group, prefix + "_mean", {dim}, moments.data());
  checkpoint_file::write(group, prefix + "_var", {dim}, moments.data() + dim);
  hdf5::write_double_attribute(group, prefix + "_count", moments.back());
}

std::vector<double> read_moments(const checkpoint_file::Reader& file, const std::string& prefix, int dim) {
  if (!file.has_object("/normalization"))
    file.damaged("/normalization is missing, which its config's " + prefix + " normalisation needs");
  std::vector<double> moments(static_cast<std::size_t>(2 * dim + 1), 0.0);
  const std::vector<std::vector<hsize_t>> shape{{static_cast<hsize_t>(dim)}};
  file.read_into("/normalization/" + prefix + "_mean", shape, moments.data());
  file.read_into("/normalization/" + prefix + "_var", shape, moments.data() + dim);
  for (int k = 0; k < 2 * dim; ++k)
    if (!std::isfinite(moments[k]) || (k >= dim && moments[k] < 0))
      file.damaged("dataset '/normalization/" + prefix + (k < dim ? "_mean" : "_var") + "' holds " +
                   format_precise(moments[k]) + " where a finite" + (k < dim ? "" : " non-negative") +
                   " number is expected");
  moments.back() = file.number("/normalization", prefix + "_count", 0.0, 1e300);
  return moments;
}

Checkpoint read_checkpoint_file(const checkpoint_file::Reader& file) {
  const std::string& path = file.path();
  if (!file.has_attribute("/", "format") || file.text("/", "format") != kFormat)
    throw InputError("'" + path + "' is an HDF5 file but not a Surge checkpoint (no format = \"" + kFormat + "\")");
  const std::int64_t version = file.integers("/", "format_version", 1).front();
  if (version != kFormatVersion)
    throw InputError("checkpoint '" + path + "' has format_version " + std::to_string(version) + "; this build reads " +
                     std::to_string(kFormatVersion));
  Checkpoint c;
  c.path = path;
  c.scenario = file.text("/", "scenario");
  c.gym_id = file.text("/", "gym_id");
  for (const std::string* name : {&c.scenario, &c.gym_id})
    if (name->empty() || name->size() > 64)
      file.damaged("attribute '" + std::string(name == &c.scenario ? "scenario" : "gym_id") + "' of / is '" +
                   format_excerpt(*name) + "' where a name of 1 to 64 characters is expected");
  c.obs_dim = static_cast<int>(file.integer("/", "obs_dim", 1, kMaxObsDim));
  c.num_actions = static_cast<int>(file.integer("/", "num_actions", 0, kMaxActions));
  // Checkpoints from before continuous actions lack it: they are discrete.
  c.action_dim =
      file.has_attribute("/", "action_dim") ? static_cast<int>(file.integer("/", "action_dim", 0, kMaxActionDim)) : 0;
  if ((c.action_dim == 0) == (c.num_actions == 0))
    file.damaged("it has num_actions = " + std::to_string(c.num_actions) +
                 " and action_dim = " + std::to_string(c.action_dim) + " where exactly one of them must be positive");
  c.global_step = file.integer("/", "global_step", 0, kMaxCount);
  c.iteration = file.integer("/", "iteration", 0, kMaxCount);
  c.ranks = file.has_attribute("/", "ranks") ? static_cast<int>(file.integer("/", "ranks", 1, 1 << 20)) : 1;
  const std::string config = file.text("/", "config");
  try {
    c.config = load_train_config(config, "config", false, "");
    // Runs saved before the CPU's fused MLP path existed resume on the BLAS path they ran on.
    if (!train_config_sets(config, "config", "cpu_fused_mlp")) c.config.cpu_fused_mlp = false;
    // Likewise on CUDA: runs saved before the fused CUDA kernels resume on cuBLASLt.
    if (!train_config_sets(config, "config", "cuda_fused_mlp")) c.config.cuda_fused_mlp = false;
    c.config.validate();
  } catch (const InputError& error) {
    file.damaged("attribute 'config' of / is not a config this build accepts (" + std::string(error.what()) + ")");
  }
  // A run may be resumed with fewer total_steps than it had done, so the bound is the steps a config allows.
  const std::int64_t batch = c.config.batch_size() * c.ranks;
  if (c.iteration > kMaxTotalSteps / batch || c.global_step != c.iteration * batch)
    file.damaged("attributes iteration = " + std::to_string(c.iteration) +
                 " and global_step = " + std::to_string(c.global_step) + " do not fit its config's batch of " +
                 std::to_string(batch) + " steps over its ranks (global_step = iteration x batch, at most " +
                 std::to_string(kMaxTotalSteps) + ")");
  const ActorCritic network = checkpoint_network(c);
  c.params = read_slices(file, "/parameters", network.table(), false);
  c.adam_m = read_slices(file, "/optimizer/adam_m", network.table(), false);
  c.adam_v = read_slices(file, "/optimizer/adam_v", network.table(), true);
  c.adam_step = file.number("/optimizer", "step", 0.0, static_cast<double>(kMaxCount));
  c.learning_rate = file.number("/optimizer", "learning_rate", 0.0, std::numeric_limits<float>::max());
  if (c.config.normalize_obs) c.obs_moments = read_moments(file, "obs", c.obs_dim);
  if (c.config.normalize_reward) c.reward_moments = read_moments(file, "reward", 1);
  return c;
}

}  // namespace

bool checkpoints_available() { return true; }

ActorCritic checkpoint_network(const Checkpoint& c) {
  // The config says the observations: a pixel policy's encoder slices come first in its table.
  if (c.action_dim > 0) return ActorCritic::for_config(c.obs_dim, ActionKind::Continuous, c.action_dim, c.config);
  return ActorCritic::for_config(c.obs_dim, ActionKind::Discrete, c.num_actions, c.config);
}

void write_checkpoint(const std::string& path, const Checkpoint& c) {
  const ActorCritic network = checkpoint_network(c);
  const ParamTable& table = network.table();
  SURGE_CHECK(static_cast<std::int64_t>(c.params.size()) == table.total() &&
                  static_cast<std::int64_t>(c.adam_m.size()) == table.total() &&
                  static_cast<std::int64_t>(c.adam_v.size()) == table.total(),
              "checkpoint buffers do not match the network's table");
  SURGE_CHECK(c.obs_moments.size() == (c.config.normalize_obs ? static_cast<std::size_t>(2 * c.obs_dim + 1) : 0u) &&
                  c.reward_moments.size() == (c.config.normalize_reward ? 3u : 0u),
              "checkpoint normalisation statistics do not match the config");
  const std::string temporary = path + ".partial." + std::to_string(::getpid());
  try {  // a write that fails part way (a full disk) leaves no temporary behind
    hdf5::Lock lock;
    hdf5::Handle file = checkpoint_file::create(temporary);
    const hid_t root = file.get();
    hdf5::write_string_attribute(root, "format", kFormat);
    hdf5::write_int_attribute(root, "format_version", kFormatVersion);
    hdf5::write_string_attribute(root, "scenario", c.scenario);
    hdf5::write_string_attribute(root, "gym_id", c.gym_id);
    hdf5::write_int_attribute(root, "obs_dim", c.obs_dim);
    hdf5::write_int_attribute(root, "num_actions", c.num_actions);
    hdf5::write_int_attribute(root, "action_dim", c.action_dim);
    hdf5::write_int_attribute(root, "global_step", c.global_step);
    hdf5::write_int_attribute(root, "iteration", c.iteration);
    if (c.ranks > 1) hdf5::write_int_attribute(root, "ranks", c.ranks);
    hdf5::write_string_attribute(root, "config", c.config.to_toml());
    {
      hdf5::Handle parameters = create_group(root, "parameters");
      write_slices(parameters.get(), table, c.params);
    }
    hdf5::Handle optimizer = create_group(root, "optimizer");
    hdf5::write_double_attribute(optimizer.get(), "step", c.adam_step);
    hdf5::write_double_attribute(optimizer.get(), "learning_rate", c.learning_rate);
    const AdamConfig adam{};
    hdf5::write_double_attribute(optimizer.get(), "beta1", adam.beta1);
    hdf5::write_double_attribute(optimizer.get(), "beta2", adam.beta2);
    hdf5::write_double_attribute(optimizer.get(), "eps", c.config.adam_eps);
    hdf5::write_double_attribute(optimizer.get(), "max_grad_norm", c.config.max_grad_norm);
    {
      hdf5::Handle m = create_group(optimizer.get(), "adam_m");
      write_slices(m.get(), table, c.adam_m);
    }
    {
      hdf5::Handle v = create_group(optimizer.get(), "adam_v");
      write_slices(v.get(), table, c.adam_v);
    }
    optimizer.reset();
    if (!c.obs_moments.empty() || !c.reward_moments.empty()) {
      hdf5::Handle normalization = create_group(root, "normalization");
      if (!c.obs_moments.empty()) write_moments(normalization.get(), "obs", c.obs_moments);
      if (!c.reward_moments.empty()) write_moments(normalization.get(), "reward", c.reward_moments);
    }
    if (file.close() < 0) {
      std::remove(temporary.c_str());
      throw Error("could not finish writing checkpoint '" + path + "': " + hdf5::error_stack());
    }
  } catch (...) {
    std::remove(temporary.c_str());
    throw;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw Error("could not move the checkpoint into place at '" + path + "'");
  }
}

Checkpoint checkpoint_of(const Trainer& trainer) {
  Checkpoint c;
  c.scenario = trainer.spec().name;
  c.gym_id = trainer.spec().gym_id;
  c.obs_dim = trainer.network().obs_dim();
  c.num_actions = trainer.network().num_actions();
  c.action_dim = trainer.network().action_dim();
  c.config = trainer.config();
  const TrainState state = trainer.train_state();
  c.iteration = state.iteration;
  c.ranks = trainer.ranks().size();
  c.global_step = state.iteration * trainer.config().batch_size() * c.ranks;
  c.params = to_host(trainer.parameters(), trainer.stream());
  c.adam_m = to_host(trainer.adam_first_moment(), trainer.stream());
  c.adam_v = to_host(trainer.adam_second_moment(), trainer.stream());
  const OptimizerScalars optimizer = trainer.optimizer_scalars();
  c.adam_step = optimizer.step;
  c.learning_rate = optimizer.learning_rate;
  c.obs_moments = to_host(trainer.obs_moments(), trainer.stream());
  c.reward_moments = to_host(trainer.reward_moments(), trainer.stream());
  return c;
}

void write_checkpoint(const std::string& path, const Trainer& trainer) {
  write_checkpoint(path, checkpoint_of(trainer));
}

Checkpoint read_checkpoint(const std::string& path) {
  hdf5::Lock lock;
  const checkpoint_file::Reader file(path);
  return checkpoint_file::guarded(path, [&] { return read_checkpoint_file(file); });
}

void require_scenario(const Checkpoint& checkpoint, const ScenarioSpec& spec) {
  const auto dims = [](int obs_dim, int num_actions, int action_dim) {
    return "obs_dim " + std::to_string(obs_dim) + ", num_actions " + std::to_string(num_actions) + ", action_dim " +
           std::to_string(action_dim);
  };
  if (spec.obs_dim != checkpoint.obs_dim || spec.num_actions != checkpoint.num_actions ||
      spec.action_dim != checkpoint.action_dim)
    throw InputError("checkpoint '" + checkpoint.path + "' holds a policy for " +
                     dims(checkpoint.obs_dim, checkpoint.num_actions, checkpoint.action_dim) + " where " + spec.name +
                     " has " + dims(spec.obs_dim, spec.num_actions, spec.action_dim) +
                     "; the file is damaged or was written by another version of surge");
}

}  // namespace surge::rl
