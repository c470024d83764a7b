#pragma once
// The scenarios Surge knows, by name, each behind the type-erased Engine interface.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "sim/memory_plan.hpp"

namespace surge {

// Names of every registered scenario, in registration order.
std::vector<std::string> scenario_names();
// The spec of a scenario; throws InputError listing the known names when `name` is unknown.
const ScenarioSpec& scenario_spec(const std::string& name);
// Builds N environments of `name` on `device`, seeded with `seed`, reset and ready to step; with
// `first_env`, they are global environments first_env .. first_env + N - 1 (Engine::first_env).
std::unique_ptr<Engine> make_engine(const std::string& name, Device device, std::int64_t num_envs, std::uint64_t seed,
                                    const PhysicsConfig& physics, std::int64_t first_env = 0);
std::unique_ptr<Engine> make_engine(const std::string& name, Device device, std::int64_t num_envs, std::uint64_t seed);
// Builds one engine of K = agents.size() agents of N environments each (Engine::num_agents), stepped in one
// launch: agent k's environments step exactly as those of make_engine(name, device, N, agents[k].seed,
// agents[k].physics, first_env) do.
std::unique_ptr<Engine> make_engine(const std::string& name, Device device, std::int64_t envs_per_agent,
                                    const std::vector<EngineAgent>& agents, std::int64_t first_env = 0);
// The device memory make_engine would allocate for N environments of `name` (for each of `num_agents`
// agents), buffer by buffer.
MemoryPlan engine_memory_plan(const std::string& name, Device device, std::int64_t num_envs,
                              std::int64_t num_agents = 1);

}  // namespace surge
