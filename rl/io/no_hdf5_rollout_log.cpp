// The rollout log's file and its reader in a build without HDF5: opening either throws InputError
// saying so, and the rest is never reached, so `surge train --log-rollouts` and `surge h5` compile
// everywhere and answer with one line. Built instead of rollout_log_file.cpp and rollout_file.cpp
// (rl/io/io.cmake).
#include "rl/io/no_hdf5.hpp"
#include "rl/io/rollout_file.hpp"
#include "rl/io/rollout_log_file.hpp"

namespace surge::rl {
struct RolloutLogFile::Datasets {};

RolloutLogFile::RolloutLogFile(const RolloutLogOptions& options, const std::vector<LogField>&) {
  no_hdf5("rollout log '" + options.path + "'");
}
RolloutLogFile::~RolloutLogFile() = default;
void RolloutLogFile::append(const std::vector<const void*>&, std::int64_t, std::int64_t) {}
void RolloutLogFile::flush() {}
void RolloutLogFile::finish(std::int64_t) {}
void RolloutLogFile::release() noexcept {}

RolloutFile::RolloutFile(const std::string& path) : path_(path) { no_hdf5("rollout log '" + path + "'"); }
RolloutFile::~RolloutFile() = default;
std::int64_t RolloutFile::schema_version() const { no_hdf5(path_); }
std::vector<std::pair<std::string, std::string>> RolloutFile::attributes() const { no_hdf5(path_); }
std::optional<std::string> RolloutFile::attribute(const std::string&) const { no_hdf5(path_); }
std::optional<std::vector<std::string>> RolloutFile::string_list_attribute(const std::string&) const { no_hdf5(path_); }
std::vector<DatasetInfo> RolloutFile::datasets() const { no_hdf5(path_); }
bool RolloutFile::has_dataset(const std::string&) const { no_hdf5(path_); }
std::vector<std::string> RolloutFile::dataset_names() const { no_hdf5(path_); }
std::int64_t RolloutFile::row_of_iteration(std::int64_t) const { no_hdf5(path_); }
DatasetValues RolloutFile::read(const std::string&, std::optional<std::int64_t>) const { no_hdf5(path_); }

std::size_t complete_prefix(const std::vector<std::int64_t>&, std::int64_t) { no_hdf5("rollout logs"); }
std::string describe_ranges(const std::vector<std::int64_t>&, std::size_t) { no_hdf5("rollout logs"); }

}  // namespace surge::rl
