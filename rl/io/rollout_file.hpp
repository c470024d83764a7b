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
  std::int64_t raw_bytes = 0;        // its values' size uncompressed
  std::int64_t stored_bytes = 0;     // the space its chunks take in the file (compressed)
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
  // A text attribute's values (physics_names, obs_names); nullopt where the file has none of that
  // name or it is not text.
  std::optional<std::vector<std::string>> string_list_attribute(const std::string& name) const;
  // Every dataset, in creation order.
  std::vector<DatasetInfo> datasets() const;
  bool has_dataset(const std::string& name) const;
  std::vector<std::string> dataset_names() const;

  // The logged iterations (the complete rows: those that `iteration` and every per-iteration dataset
  // hold), their global steps and the logged env ids.
  const std::vector<std::int64_t>& iterations() const { return iterations_; }
  const std::vector<std::int64_t>& global_steps() const { return global_steps_; }
  const std::vector<std::int64_t>& env_ids() const { return env_ids_; }
  // Rows that some dataset holds beyond the complete ones (an iteration being written when its writer
  // died, or still being written): the readers leave them out.
  std::int64_t incomplete_rows() const { return incomplete_rows_; }
  // The row of a logged iteration; throws InputError listing what was logged when it was not.
  std::int64_t row_of_iteration(std::int64_t iteration) const;

  // A dataset's values: all complete rows, or only `row` (its first axis dropped). Throws
  // InputError listing the known datasets for an unknown name. Every member throws InputError naming
  // the file when HDF5 cannot read what it needs (a damaged file).
  DatasetValues read(const std::string& name, std::optional<std::int64_t> row = std::nullopt) const;

 private:
  // The members' bodies, under HDF5's library lock.
  void read_index_rows();
  std::vector<std::string> dataset_names_locked() const;
  std::vector<DatasetInfo> dataset_infos(const std::vector<std::string>& names) const;
  DatasetValues read_locked(const std::string& name, std::optional<std::int64_t> row) const;

  std::string path_;
  std::int64_t file_id_ = -1;  // hid_t
  std::vector<std::int64_t> iterations_, global_steps_, env_ids_;
  std::int64_t incomplete_rows_ = 0;
};

// How many of a log's `iteration` values count: the longest prefix of values that are at least
// `first_iteration` and strictly increasing. A row beyond it was still being written when its writer
// died (HDF5 reads an index entry written out before its value as 0).
std::size_t complete_prefix(const std::vector<std::int64_t>& iterations, std::int64_t first_iteration);

// "0-9, 20, 30-39": increasing integers as ranges, for people to read.
std::string describe_ranges(const std::vector<std::int64_t>& values, std::size_t max_ranges = 12);

}  // namespace surge::rl
