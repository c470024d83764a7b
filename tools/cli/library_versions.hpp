#pragma once
// The versions of the libraries Surge uses, asked of the libraries themselves at run time (dlopen),
// so that `surge doctor` reports what this machine has rather than what the build saw.
#include <cstddef>
#include <vector>

#include "sim/cuda_diagnosis.hpp"

namespace surge::cli {

// cuBLASLt, cuDNN, cuRAND and HDF5, each found or not. `runtime_version` (CUDA's integer, 0 without
// the CUDA backend) picks which major versions of the CUDA libraries to look for first.
std::vector<LibraryFact> probe_libraries(int runtime_version, bool cuda_built);

// The libraries' own version integers, decoded to "major.minor.patch".
std::string decode_cublas_version(std::size_t version);  // major*10000 + minor*100 + patch
std::string decode_cudnn_version(std::size_t version);   // cuDNN 9+: major*10000 + ...; cuDNN 8: major*1000 + ...
std::string decode_curand_version(int version);          // major*1000 + minor*100 + patch

}  // namespace surge::cli
