#include "sim/engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <sstream>

#include "sim/error.hpp"
#include "sim/format.hpp"

namespace surge {

int ScenarioSpec::param_index(const std::string& param_name) const {
  for (int j = 0; j < param_count(); ++j)
    if (param_name == params[j].name) return j;
  return -1;
}

double ScenarioSpec::round_param(double value) const {
  return param_dtype == DType::Float64 ? value : static_cast<double>(static_cast<float>(value));
}

std::string ScenarioSpec::param_text(double value) const {
  return param_dtype == DType::Float64 ? format_shortest(value) : format_shortest(static_cast<float>(value));
}

PhysicsConfig PhysicsConfig::defaults(const ScenarioSpec& spec) {
  PhysicsConfig config;
  for (const ParamInfo& param : spec.params) {
    config.value.push_back(param.default_value);
    config.low.push_back(param.default_value);
    config.high.push_back(param.default_value);
    config.randomized.push_back(0);
  }
  return config;
}

void PhysicsConfig::validate(const ScenarioSpec& spec) const {
  const std::size_t n = spec.params.size();
  SURGE_CHECK(value.size() == n && low.size() == n && high.size() == n && randomized.size() == n,
              "physics config does not match the scenario's parameter table");
  for (std::size_t j = 0; j < n; ++j) {
    const ParamInfo& info = spec.params[j];
    if (!std::isfinite(value[j]) || value[j] < info.min_value)
      throw InputError(spec.name + " parameter " + info.name + " = " + spec.param_text(value[j]) +
                       " is out of range: it must be >= " + spec.param_text(info.min_value));
    if (randomized[j]) {
      if (!std::isfinite(low[j]) || !std::isfinite(high[j]) || low[j] > high[j])
        throw InputError(spec.name + " parameter " + info.name + " has range [" + spec.param_text(low[j]) + ", " +
                         spec.param_text(high[j]) + "]: low must not exceed high");
      if (low[j] < info.min_value)
        throw InputError(spec.name + " parameter " + info.name + " range starts at " + spec.param_text(low[j]) +
                         ", below the smallest sensible value " + spec.param_text(info.min_value));
    }
  }
}

bool PhysicsConfig::any_randomized() const {
  for (auto r : randomized)
    if (r) return true;
  return false;
}

std::string PhysicsConfig::describe(const ScenarioSpec& spec) const {
  std::ostringstream out;
  bool first = true;
  for (std::size_t j = 0; j < randomized.size(); ++j) {
    if (!randomized[j]) continue;
    out << (first ? "" : ", ") << spec.params[j].name << " ~ U(" << low[j] << ", " << high[j] << ")";
    first = false;
  }
  return first ? std::string("none") : out.str();
}

std::vector<double> params_to_host(Engine& engine, const Stream& stream) {
  const TensorView params = engine.params();
  if (params.dtype == DType::Float64) return to_host(params.span<double>(), stream);
  const std::vector<float> values = to_host(params.span<float>(), stream);
  return std::vector<double>(values.begin(), values.end());
}

void params_from_host(Engine& engine, const std::vector<double>& values, const Stream& stream) {
  const TensorView params = engine.params();
  if (static_cast<std::int64_t>(values.size()) != params.numel())
    throw InputError(std::to_string(values.size()) + " environment parameters given where " + engine.spec().name +
                     " has " + std::to_string(params.numel()) + " ([N][param_count])");
  if (params.dtype == DType::Float64) return from_host(params.span<double>(), values, stream);
  from_host(params.span<float>(), std::vector<float>(values.begin(), values.end()), stream);
}

EpisodeStats Engine::episode_stats(const Stream& stream) {
  SURGE_CHECK(num_agents() == 1, "episode_stats() of an engine of " + std::to_string(num_agents()) +
                                     " agents: agent_episode_stats() gives each agent's");
  return agent_episode_stats(stream)[0];
}

std::vector<EpisodeStats> Engine::agent_episode_stats(const Stream& stream) {
  DeviceBuffer<double> device_out(device(), num_agents() * kEpisodeStatsWidth);
  reduce_episode_stats(device_out.span(), stream);
  const std::vector<double> host = to_host(device_out.cspan(), stream);
  std::vector<EpisodeStats> stats;
  for (std::int64_t k = 0; k < num_agents(); ++k) {
    const double* row = host.data() + k * kEpisodeStatsWidth;
    stats.push_back({row[0], row[1], row[2]});
  }
  return stats;
}

std::vector<SavedBuffer> Engine::save_agent_state(std::int64_t agent, const Stream& stream) const {
  SURGE_CHECK(agent >= 0 && agent < num_agents(),
              "agent " + std::to_string(agent) + " of an engine of " + std::to_string(num_agents()) + " agents");
  // Only the agent's rows leave the device: a checkpoint of every agent copies each engine row once.
  const SavedRows rows{agent * envs_per_agent(), envs_per_agent(), num_envs()};
  return save_buffers(buffers(), stream, 0, &rows);
}

void Engine::restore_agent_state(std::int64_t agent, const std::vector<SavedBuffer>& saved, const std::string& what,
                                 const Stream& stream) {
  SURGE_CHECK(agent >= 0 && agent < num_agents(),
              "agent " + std::to_string(agent) + " of an engine of " + std::to_string(num_agents()) + " agents");
  const SavedRows rows{agent * envs_per_agent(), envs_per_agent(), num_envs()};
  restore_buffers(buffers(), saved, what, stream, 0, &rows);
}

TensorView Engine::agent_params(std::int64_t agent) {
  TensorView view = params();
  const Span<std::byte> bytes{static_cast<std::byte*>(view.data),
                              view.numel() * static_cast<std::int64_t>(dtype_size(view.dtype)), view.device};
  view.data = agent_rows(bytes, agent).data;  // rows of [N][param_count]: the strides stay
  view.shape[0] = envs_per_agent();
  return view;
}

}  // namespace surge
