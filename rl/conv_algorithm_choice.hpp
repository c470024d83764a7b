#pragma once
// Which of cuDNN's ranked convolution algorithms a layer uses (rl/conv_cudnn.hpp), as plain host logic so
// that the CPU tests check the rule: the first candidate in cuDNN's heuristic order that succeeded, fits
// in the planned workspace and is deterministic (a replayed run then matches bit for bit); failing that,
// the first that succeeded and fits; failing that, none.
#include <cstddef>
#include <vector>

namespace surge::rl {

struct ConvAlgorithmCandidate {
  bool usable = false;  // cuDNN reported success for it
  std::size_t workspace_bytes = 0;
  bool deterministic = false;
};

// The index of the chosen candidate in `ranked` (cuDNN's order), or -1 when none fits `limit`.
inline int choose_conv_algorithm(const std::vector<ConvAlgorithmCandidate>& ranked, std::size_t limit) {
  int fallback = -1;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const ConvAlgorithmCandidate& c = ranked[i];
    if (!c.usable || c.workspace_bytes > limit) continue;
    if (c.deterministic) return static_cast<int>(i);
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  return fallback;
}

}  // namespace surge::rl
