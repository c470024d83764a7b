// The registry: the one place where engines are instantiated, one line per scenario.
// Compiled by nvcc when CUDA is on (engines then run on both backends), else as plain C++.
#include "scenarios/registry.hpp"

#include <functional>
#include <utility>

#include "scenarios/acrobot.hpp"
#include "scenarios/cartpole.hpp"
#include "scenarios/mountain_car.hpp"
#include "scenarios/mountain_car_continuous.hpp"
#include "scenarios/pendulum.hpp"
#include "sim/error.hpp"
#include "sim/vec_env.cuh"

namespace surge {
namespace {

struct Entry {
  ScenarioSpec spec;
  std::function<std::unique_ptr<Engine>(Device, std::int64_t, std::vector<EngineAgent>, std::int64_t)> make;
  std::function<MemoryPlan(Device, std::int64_t, std::int64_t)> memory_plan;
};

template <class S>
Entry entry() {
  return {make_spec<S>(),
          [](Device device, std::int64_t n, std::vector<EngineAgent> agents, std::int64_t first) {
            return std::unique_ptr<Engine>(new VecEnv<S>(device, n, std::move(agents), first));
          },
          &VecEnv<S>::memory_plan};
}

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = {
      entry<CartPole>(), entry<MountainCar>(), entry<Acrobot>(), entry<Pendulum>(), entry<MountainCarContinuous>(),
  };
  return entries;
}

const Entry& find(const std::string& name) {
  for (const Entry& e : registry())
    if (e.spec.name == name) return e;
  std::string known;
  for (const Entry& e : registry()) known += (known.empty() ? "" : ", ") + e.spec.name;
  throw InputError("unknown scenario '" + name + "': known scenarios are " + known);
}

}  // namespace

std::vector<std::string> scenario_names() {
  std::vector<std::string> names;
  for (const Entry& e : registry()) names.push_back(e.spec.name);
  return names;
}

const ScenarioSpec& scenario_spec(const std::string& name) { return find(name).spec; }

std::unique_ptr<Engine> make_engine(const std::string& name, Device device, std::int64_t num_envs, std::uint64_t seed,
                                    const PhysicsConfig& physics, std::int64_t first_env) {
  return find(name).make(device, num_envs, {{seed, physics}}, first_env);
}

std::unique_ptr<Engine> make_engine(const std::string& name, Device device, std::int64_t num_envs, std::uint64_t seed) {
  const Entry& e = find(name);
  return e.make(device, num_envs, {{seed, PhysicsConfig::defaults(e.spec)}}, 0);
}

std::unique_ptr<Engine> make_engine(const std::string& name, Device device, std::int64_t envs_per_agent,
                                    const std::vector<EngineAgent>& agents, std::int64_t first_env) {
  return find(name).make(device, envs_per_agent, agents, first_env);
}

MemoryPlan engine_memory_plan(const std::string& name, Device device, std::int64_t num_envs, std::int64_t num_agents) {
  return find(name).memory_plan(device, num_envs, num_agents);
}

}  // namespace surge
