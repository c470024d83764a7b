#pragma once
// Default training configs (scenarios/configs/<scenario>.toml), embedded in the program at build time
// so that it needs no files beside it.
#include <string>

namespace surge {

// The TOML text of `scenario`'s default training config, or an empty string when it has none.
std::string default_train_config(const std::string& scenario);
// Where that text came from, for messages ("scenarios/configs/cartpole.toml").
std::string default_train_config_name(const std::string& scenario);

}  // namespace surge
