#pragma once
// Reading a rollout log back (docs/hdf5-schema.md): what `surge h5` and the tests use.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace surge::rl {

struct DatasetInfo {
  std::string name;
  std::string dtype;                 // "float32", "int64", "uint8", ...
  std::vector<std::int64_t> shape;   // current shape; the first axis is the logged iteration (but for env_id)
  std::vector<std::int64_t> chunk;   // empty when not chunked
  std::vector<std::string> filters;  // "shuffle", "deflate(4)", ...
  std::string axes, description;     // the dataset's attributes, where present
};

// Values of a dataset read as double (exact for every type the log writes but int64 beyond 2^53).
struct DatasetValues {
  std::vector<std::int64_t> shape;
  std::vector<double> values;  // row-major
};

class RolloutFile {
 public:
  // Throws InputError, in one line naming the path and the way out, when the file is missing, is
  // not HDF5, or is HDF5 but not a Surge rollout log (or one of a newer schema), and in a build
  // without HDF5.
  explicit RolloutFile(const std::string& path);
  ~RolloutFile();
  RolloutFile(const RolloutFile&) = delete;
  RolloutFile& operator=(const RolloutFile&) = delete;

  const std::string& path() const { return path_; }
  std::int64_t schema_version() const;
  // File attributes as (name, value as text), in the order they were written.
  std::vector<std::pair<std::string, std::string>> attributes() const;
  std::optional<std::string> attribute(const std::string& name) const;
  // Every dataset, in creation order.
  std::vector<DatasetInfo> datasets() const;
  bool has_dataset(const std::string& name) const;
  std::vector<std::string> dataset_names() const;

  // The logged iterations (the complete rows), their global steps and the logged env ids.
  const std::vector<std::int64_t>& iterations() const { return iterations_; }
  const std::vector<std::int64_t>& global_steps() const { return global_steps_; }
  const std::vector<std::int64_t>& env_ids() const { return env_ids_; }
  // The row of a logged iteration; throws InputError listing what was logged when it was not.
  std::int64_t row_of_iteration(std::int64_t iteration) const;

  // A dataset's values: all complete rows, or only `row` (its first axis dropped). Throws
  // InputError listing the known datasets for an unknown name.
  DatasetValues read(const std::string& name, std::optional<std::int64_t> row = std::nullopt) const;

 private:
  std::string path_;
  std::int64_t file_id_ = -1;  // hid_t
  std::vector<std::int64_t> iterations_, global_steps_, env_ids_;
};

// "0-9, 20, 30-39": increasing integers as ranges, for people to read.
std::string describe_ranges(const std::vector<std::int64_t>& values, std::size_t max_ranges = 12);

}  // namespace surge::rl
