#pragma once
// What every file-format call answers in a build without HDF5: one InputError naming the file (or the
// kind of file) and the way out.
#include <string>

#include "sim/error.hpp"

namespace surge::rl {

[[noreturn]] inline void no_hdf5(const std::string& what) {
  throw InputError(what + ": this build has no HDF5: install libhdf5-dev and rebuild");
}

}  // namespace surge::rl
