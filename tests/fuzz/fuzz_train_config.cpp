// The train config loader (rl/train_config.hpp): the input up to its last line as a TOML file, the last
// line as a --set KEY=VALUE. A config that loads and validates must write itself as TOML that loads back
// to the same config.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rl/train_config.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t last_line = input.rfind('\n');
  const std::string toml = last_line == std::string::npos ? input : input.substr(0, last_line);
  const std::string setting = last_line == std::string::npos ? "" : input.substr(last_line + 1);
  const bool on_cuda = size > 0 && (data[0] & 1);
  for (const char* preset : {"", "cleanrl"}) {
    surge::fuzz::expect_input_error_only([&] {
      surge::rl::TrainConfig config = surge::rl::load_train_config(toml, "fuzz.toml", on_cuda, preset);
      if (!setting.empty()) surge::rl::apply_config_setting(config, setting);
      config.validate();
      const std::string written = config.to_toml();
      const surge::rl::TrainConfig again = surge::rl::load_train_config(written, "written.toml", false, "");
      if (again.to_toml() != written) {
        std::fprintf(stderr, "fuzz: a valid config does not read back the same:\n%s\n---\n%s\n", written.c_str(),
                     again.to_toml().c_str());
        std::abort();
      }
    });
  }
  return 0;
}
