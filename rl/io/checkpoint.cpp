#include "rl/io/checkpoint.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "rl/actor_critic.hpp"
#include "rl/io/hdf5_util.hpp"
#include "rl/trainer.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

constexpr const char* kFormat = "surge-checkpoint";
constexpr std::int64_t kFormatVersion = 1;

hdf5::Handle create_group(hid_t parent, const std::string& name) {
  return hdf5::Handle(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create group " + name);
}

// One dataset per slice under `group`, from a flat buffer laid out by `table`.
void write_slices(hid_t group, const ParamTable& table, const std::vector<float>& flat) {
  for (const ParamSlice& slice : table.slices())
    hdf5::write_dataset(group, slice.name, {static_cast<hsize_t>(slice.rows), static_cast<hsize_t>(slice.cols)},
                        flat.data() + slice.offset);
}

std::vector<float> read_slices(hid_t file, const std::string& group, const ParamTable& table, const std::string& path) {
  std::vector<float> flat(static_cast<std::size_t>(table.total()), 0.0f);
  for (const ParamSlice& slice : table.slices())
    hdf5::read_dataset_into(file, group + "/" + slice.name, path,
                            {static_cast<hsize_t>(slice.rows), static_cast<hsize_t>(slice.cols)},
                            flat.data() + slice.offset);
  return flat;
}

// Running moments [2*dim + 1] as <prefix>_mean [dim], <prefix>_var [dim] and attribute <prefix>_count.
void write_moments(hid_t group, const std::string& prefix, const std::vector<double>& moments) {
  const hsize_t dim = (moments.size() - 1) / 2;
  hdf5::write_dataset(group, prefix + "_mean", {dim}, moments.data());
  hdf5::write_dataset(group, prefix + "_var", {dim}, moments.data() + dim);
  hdf5::write_double_attribute(group, prefix + "_count", moments.back());
}

std::vector<double> read_moments(hid_t file, const std::string& prefix, int dim, const std::string& path) {
  std::vector<double> moments(static_cast<std::size_t>(2 * dim + 1), 0.0);
  if (H5Lexists(file, "normalization", H5P_DEFAULT) <= 0)
    throw InputError("checkpoint '" + path + "' lacks /normalization, which its config's " + prefix +
                     " normalisation needs; it was not written by surge train");
  hdf5::Handle group(H5Gopen2(file, "normalization", H5P_DEFAULT), "open /normalization");
  const std::vector<hsize_t> shape{static_cast<hsize_t>(dim)};
  hdf5::read_dataset_into(group.get(), prefix + "_mean", path, shape, moments.data());
  hdf5::read_dataset_into(group.get(), prefix + "_var", path, shape, moments.data() + dim);
  moments.back() = hdf5::read_double_attribute(group.get(), prefix + "_count");
  return moments;
}

}  // namespace

bool checkpoints_available() { return true; }

ActorCritic checkpoint_network(const Checkpoint& c) {
  if (c.action_dim > 0) return ActorCritic(c.obs_dim, ActionKind::Continuous, c.action_dim, c.config);
  return ActorCritic(c.obs_dim, c.num_actions, c.config);
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
    hdf5::Handle file(H5Fcreate(temporary.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "create " + temporary);
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

void write_checkpoint(const std::string& path, const Trainer& trainer) {
  Checkpoint c;
  c.scenario = trainer.spec().name;
  c.gym_id = trainer.spec().gym_id;
  c.obs_dim = trainer.network().obs_dim();
  c.num_actions = trainer.network().num_actions();
  c.action_dim = trainer.network().action_dim();
  c.config = trainer.config();
  const TrainState state = trainer.train_state();
  c.iteration = state.iteration;
  c.global_step = state.iteration * trainer.config().batch_size();
  c.params = to_host(trainer.parameters(), trainer.stream());
  c.adam_m = to_host(trainer.adam_first_moment(), trainer.stream());
  c.adam_v = to_host(trainer.adam_second_moment(), trainer.stream());
  const OptimizerScalars optimizer = trainer.optimizer_scalars();
  c.adam_step = optimizer.step;
  c.learning_rate = optimizer.learning_rate;
  c.obs_moments = to_host(trainer.obs_moments(), trainer.stream());
  c.reward_moments = to_host(trainer.reward_moments(), trainer.stream());
  write_checkpoint(path, c);
}

Checkpoint read_checkpoint(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    throw InputError("checkpoint '" + path + "' does not exist; `surge train --out DIR` writes DIR/checkpoint.h5");
  hdf5::Lock lock;
  if (H5Fis_hdf5(path.c_str()) <= 0) throw InputError("'" + path + "' is not an HDF5 file, so not a Surge checkpoint");
  hdf5::Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open " + path);
  const hid_t root = file.get();
  if (!hdf5::has_attribute(root, "format") || hdf5::read_string_attribute(root, "format") != kFormat)
    throw InputError("'" + path + "' is an HDF5 file but not a Surge checkpoint (no format = \"" + kFormat + "\")");
  const std::int64_t version = hdf5::read_int_attribute(root, "format_version");
  if (version != kFormatVersion)
    throw InputError("checkpoint '" + path + "' has format_version " + std::to_string(version) + "; this build reads " +
                     std::to_string(kFormatVersion));
  Checkpoint c;
  c.scenario = hdf5::read_string_attribute(root, "scenario");
  c.gym_id = hdf5::read_string_attribute(root, "gym_id");
  c.obs_dim = static_cast<int>(hdf5::read_int_attribute(root, "obs_dim"));
  c.num_actions = static_cast<int>(hdf5::read_int_attribute(root, "num_actions"));
  // Checkpoints from before continuous actions lack it: they are discrete.
  c.action_dim =
      hdf5::has_attribute(root, "action_dim") ? static_cast<int>(hdf5::read_int_attribute(root, "action_dim")) : 0;
  if (c.action_dim < 0 || c.action_dim > 64 || (c.action_dim == 0) == (c.num_actions == 0))
    throw InputError("checkpoint '" + path + "' has num_actions = " + std::to_string(c.num_actions) +
                     " and action_dim = " + std::to_string(c.action_dim) + "; exactly one of them must be positive");
  c.global_step = hdf5::read_int_attribute(root, "global_step");
  c.iteration = hdf5::read_int_attribute(root, "iteration");
  c.config = load_train_config(hdf5::read_string_attribute(root, "config"), path + " (config)", false, "");
  const ActorCritic network = checkpoint_network(c);
  c.params = read_slices(root, "parameters", network.table(), path);
  c.adam_m = read_slices(root, "optimizer/adam_m", network.table(), path);
  c.adam_v = read_slices(root, "optimizer/adam_v", network.table(), path);
  hdf5::Handle optimizer(H5Gopen2(root, "optimizer", H5P_DEFAULT), "open /optimizer");
  c.adam_step = hdf5::read_double_attribute(optimizer.get(), "step");
  c.learning_rate = hdf5::read_double_attribute(optimizer.get(), "learning_rate");
  if (c.config.normalize_obs) c.obs_moments = read_moments(root, "obs", c.obs_dim, path);
  if (c.config.normalize_reward) c.reward_moments = read_moments(root, "reward", 1, path);
  return c;
}

}  // namespace surge::rl
