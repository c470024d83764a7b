#include "tools/cli/library_versions.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <functional>
#include <string>

namespace surge::cli {
namespace {

// Library file names to try, each first through the loader's search path, then in the CUDA
// toolkit's usual folders (which the loader may not know about). RTLD_NODELETE keeps a probed library
// mapped after dlclose, so that what it allocated for itself when loaded (cuDNN's and cuBLASLt's static
// C++ runtimes) stays reachable: unloaded, LeakSanitizer reports it as leaked from an unknown module that
// no suppression can name (tools/sanitize-check.sh).
struct Loaded {
  void* handle = nullptr;
  std::string path;
};

Loaded open_first(const std::vector<std::string>& names, bool cuda_library) {
  std::vector<std::string> folders = {""};
  if (cuda_library) {
    for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
      if (const char* root = std::getenv(variable)) {
        folders.push_back(std::string(root) + "/lib64/");
        folders.push_back(std::string(root) + "/lib/");
      }
    folders.push_back("/usr/local/cuda/lib64/");
    folders.push_back("/usr/local/cuda/lib/");
  }
  for (const std::string& folder : folders)
    for (const std::string& name : names)
      if (void* handle = dlopen((folder + name).c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE))
        return {handle, folder + name};
  return {};
}

// The file a symbol was loaded from, which names the library the loader actually chose.
std::string file_of(void* symbol, const std::string& fallback) {
  Dl_info info{};
  if (symbol && dladdr(symbol, &info) && info.dli_fname) return info.dli_fname;
  return fallback;
}

LibraryFact probe(LibraryFact fact, const std::vector<std::string>& names, bool cuda_library, const char* symbol_name,
                  const std::function<std::string(void*)>& ask_version) {
  const Loaded loaded = open_first(names, cuda_library);
  if (!loaded.handle) return fact;
  void* symbol = dlsym(loaded.handle, symbol_name);
  if (symbol) {
    fact.found = true;
    fact.version = ask_version(symbol);
    fact.path = file_of(symbol, loaded.path);
  }
  dlclose(loaded.handle);
  return fact;
}

std::string three_part(std::size_t major, std::size_t minor, std::size_t patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

std::string decode_cublas_version(std::size_t v) { return three_part(v / 10000, v / 100 % 100, v % 100); }

std::string decode_cudnn_version(std::size_t v) {
  if (v >= 90000) return three_part(v / 10000, v / 100 % 100, v % 100);
  return three_part(v / 1000, v / 100 % 10, v % 100);
}

std::string decode_curand_version(int v) { return three_part(v / 1000, v / 100 % 10, v % 100); }

std::vector<LibraryFact> probe_libraries(int runtime_version, bool cuda_built) {
  // The CUDA libraries' sonames follow their own majors: cuBLAS 13 with CUDA 13, cuRAND 10 throughout.
  const int cuda_major = runtime_version / 1000;
  std::vector<std::string> cublas_names, cudnn_names = {"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"};
  for (int major : {cuda_major, 13, 12})
    if (major > 0) cublas_names.push_back("libcublasLt.so." + std::to_string(major));
  cublas_names.push_back("libcublasLt.so");
  const std::string cuda_packages = cuda_major > 0
                                        ? std::to_string(cuda_major) + "-" + std::to_string(runtime_version % 1000 / 10)
                                        : std::string("13-0");

  std::vector<LibraryFact> facts;
  LibraryFact cublas{"cuBLASLt",
                     false,
                     "",
                     "",
                     cuda_built ? "the CUDA learner's matrix products" : "",
                     "install the CUDA toolkit's cuBLAS (apt-get install libcublas-" + cuda_packages + ")"};
  facts.push_back(probe(cublas, cublas_names, true, "cublasLtGetVersion",
                        [](void* f) { return decode_cublas_version(reinterpret_cast<std::size_t (*)()>(f)()); }));
  LibraryFact cudnn{"cuDNN", false, "",
                    "",      "",    "install cuDNN 9 for CUDA " + std::to_string(cuda_major > 0 ? cuda_major : 13)};
  facts.push_back(probe(cudnn, cudnn_names, true, "cudnnGetVersion",
                        [](void* f) { return decode_cudnn_version(reinterpret_cast<std::size_t (*)()>(f)()); }));
  LibraryFact curand{"cuRAND", false,
                     "",       "",
                     "",       "install the CUDA toolkit's cuRAND (apt-get install libcurand-" + cuda_packages + ")"};
  facts.push_back(probe(curand, {"libcurand.so.10", "libcurand.so"}, true, "curandGetVersion", [](void* f) {
    int version = 0;
    if (reinterpret_cast<int (*)(int*)>(f)(&version) != 0) return std::string("unknown");
    return decode_curand_version(version);
  }));
  LibraryFact hdf5{"HDF5", false, "", "", "", "install HDF5 (apt-get install libhdf5-dev)"};
  facts.push_back(probe(hdf5,
                        {"libhdf5_serial.so.103", "libhdf5.so.310", "libhdf5.so.320", "libhdf5.so.103",
                         "libhdf5_serial.so", "libhdf5.so"},
                        false, "H5get_libversion", [](void* f) {
                          unsigned major = 0, minor = 0, release = 0;
                          if (reinterpret_cast<int (*)(unsigned*, unsigned*, unsigned*)>(f)(&major, &minor, &release) <
                              0)
                            return std::string("unknown");
                          return three_part(major, minor, release);
                        }));
  return facts;
}

}  // namespace surge::cli
