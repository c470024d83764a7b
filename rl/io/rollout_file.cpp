#include "rl/io/rollout_file.hpp"

#include "rl/io/hdf5_read_guard.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <new>
#include <stdexcept>

#include "rl/io/hdf5_read_guard.hpp"
#include "rl/io/hdf5_util.hpp"
#include "rl/io/rollout_log.hpp"
#include "rl/io/rollout_schema.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

using hdf5::Handle;

std::string dtype_name(hid_t type) {
  const std::size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_FLOAT: return "float" + std::to_string(8 * size);
    case H5T_INTEGER: return std::string(H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(8 * size);
    case H5T_STRING: return "string";
    default: return "other";
  }
}

// An index dataset's first `max_rows` values (its rows beyond them are not complete).
std::vector<std::int64_t> read_index(hid_t file, const char* name, const std::string& path, std::size_t max_rows) {
  std::vector<std::int64_t> values = hdf5::read_dataset<std::int64_t>(file, name, path);
  if (values.size() > max_rows) values.resize(max_rows);
  return values;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t k = 0; k < names.size(); ++k) text += (k ? ", " : "") + names[k];
  return text;
}

// Runs `body`, turning what HDF5 reports while reading a damaged file (a failed read, a bad
// checksum, a dataset of another type) into one line of bad input naming the file.
template <class Body>
auto guarded(const std::string& path, Body&& body) -> decltype(body()) {
  const std::string damaged = "'" + path + "' is damaged or is not a complete rollout log: ";
  const std::string way_out = "; give a log written whole by 'surge train --log-rollouts'";
  const hdf5::CrashGuard crash_guard(damaged + "the HDF5 library crashed reading it" + way_out);
  try {
    return body();
  } catch (const InputError&) {
    throw;
  } catch (const Error& e) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(damaged + e.what() + way_out);
  } catch (const std::bad_alloc&) {
    throw InputError(damaged + "a dataset claims more values than fit in memory" + way_out);
  } catch (const std::length_error&) {
    throw InputError(damaged + "a dataset claims more values than fit in memory" + way_out);
  }
}

// File and dataset shapes as text in messages: "[4, 6, 4]".
std::string dims_text(const std::vector<hsize_t>& dims) {
  std::string text = "[";
  for (std::size_t k = 0; k < dims.size(); ++k) text += (k ? ", " : "") + std::to_string(dims[k]);
  return text + "]";
}

}  // namespace

std::size_t complete_prefix(const std::vector<std::int64_t>& iterations, std::int64_t first_iteration) {
  std::size_t count = 0;
  while (count < iterations.size() && iterations[count] >= first_iteration &&
         (count == 0 || iterations[count] > iterations[count - 1]))
    ++count;
  return count;
}

std::string describe_ranges(const std::vector<std::int64_t>& values, std::size_t max_ranges) {
  if (values.empty()) return "none";
  std::vector<std::string> ranges;
  std::size_t k = 0;
  while (k < values.size()) {
    std::size_t end = k;
    while (end + 1 < values.size() && values[end + 1] == values[end] + 1) ++end;
    ranges.push_back(end == k ? std::to_string(values[k])
                              : std::to_string(values[k]) + "-" + std::to_string(values[end]));
    k = end + 1;
  }
  if (ranges.size() > max_ranges) {
    const std::size_t left_out = ranges.size() - max_ranges;
    ranges.resize(max_ranges);
    ranges.push_back("... (" + std::to_string(left_out) + " more ranges)");
  }
  return joined(ranges);
}

RolloutFile::RolloutFile(const std::string& path) : path_(path) {
  const std::string quoted = "'" + path + "'";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError("cannot open " + quoted + ": no such file");
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError("cannot open " + quoted + ": it is not a file");
  hdf5::Lock lock;
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(quoted + " is not an HDF5 file; give a rollout log written by 'surge train --log-rollouts'");
  }
  // A log being written, or whose writer died, carries the mark of an open SWMR writer: HDF5 then
  // opens it only for SWMR reading (which older logs also allow, but which is refused while the same
  // file is open otherwise in this process).
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) {
    const std::string refusal = hdf5::error_stack();
    id = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
    H5Eclear2(H5E_DEFAULT);
    if (id < 0)
      throw InputError("cannot open " + quoted + ": " + refusal +
                       "; the file is damaged or was not written whole by 'surge train --log-rollouts'");
  }
  file_id_ = id;
  try {
    guarded(path, [&] { read_index_rows(); });
  } catch (...) {
    H5Fclose(static_cast<hid_t>(file_id_));
    H5Eclear2(H5E_DEFAULT);
    throw;
  }
}

// Under the library lock: checks the file is ours, then reads the indices and cuts them to the rows
// complete in every per-iteration dataset.
void RolloutFile::read_index_rows() {
  const hid_t id = static_cast<hid_t>(file_id_);
  const std::string quoted = "'" + path_ + "'";
  if (!hdf5::has_attribute(id, kSchemaAttribute) || hdf5::read_string_attribute(id, kSchemaAttribute) != kSchemaName)
    throw InputError(quoted + " is an HDF5 file but not a Surge rollout log (its 'schema' attribute is not '" +
                     std::string(kSchemaName) + "'); give a file written by 'surge train --log-rollouts'");
  const std::int64_t version = hdf5::read_int_attribute(id, kSchemaVersionAttribute);
  if (version > kRolloutLogSchemaVersion)
    throw InputError(quoted + " has rollout-log schema version " + std::to_string(version) +
                     ", newer than this surge reads (" + std::to_string(kRolloutLogSchemaVersion) + "); update surge");
  for (const char* name : {kIterationDataset, kGlobalStepDataset, kEnvIdDataset})
    if (H5Lexists(id, name, H5P_DEFAULT) <= 0)
      throw InputError(quoted + " is a damaged Surge rollout log: it has no '" + std::string(name) + "' dataset");
  iterations_ = read_index(id, kIterationDataset, path_, SIZE_MAX);
  const std::int64_t first_iteration =
      hdf5::has_attribute(id, kFirstIterationAttribute) ? hdf5::read_int_attribute(id, kFirstIterationAttribute) : 0;
  std::size_t rows = complete_prefix(iterations_, first_iteration);
  std::size_t longest = iterations_.size();
  // A row is complete once every per-iteration dataset holds it; a writer that died can leave one
  // longer than another.
  for (const std::string& name : dataset_names_locked()) {
    if (name == kEnvIdDataset) continue;
    const Handle dataset(H5Dopen2(id, name.c_str(), H5P_DEFAULT), "open dataset '" + name + "'");
    const std::vector<hsize_t> dims = hdf5::dataset_dims(dataset.get());
    if (dims.empty())
      throw InputError(quoted + " is a damaged Surge rollout log: its dataset '" + name +
                       "' is a scalar where one row per logged iteration is expected");
    rows = std::min<std::size_t>(rows, dims[0]);
    longest = std::max<std::size_t>(longest, dims[0]);
  }
  iterations_.resize(rows);
  global_steps_ = read_index(id, kGlobalStepDataset, path_, rows);
  env_ids_ = read_index(id, kEnvIdDataset, path_, SIZE_MAX);
  incomplete_rows_ = static_cast<std::int64_t>(longest - rows);
  if (const Handle env(H5Dopen2(id, kEnvIdDataset, H5P_DEFAULT), "open dataset 'env_id'");
      hdf5::dataset_dims(env.get()).size() != 1)
    throw InputError(quoted + " is a damaged Surge rollout log: its dataset 'env_id' is shaped " +
                     dims_text(hdf5::dataset_dims(env.get())) + " where one value per logged environment is expected");
}

RolloutFile::~RolloutFile() {
  hdf5::Lock lock;
  if (file_id_ >= 0) H5Fclose(static_cast<hid_t>(file_id_));
}

std::int64_t RolloutFile::schema_version() const {
  hdf5::Lock lock;
  return guarded(path_,
                 [&] { return hdf5::read_int_attribute(static_cast<hid_t>(file_id_), kSchemaVersionAttribute); });
}

std::vector<std::pair<std::string, std::string>> RolloutFile::attributes() const {
  hdf5::Lock lock;
  return guarded(path_, [&] {
    const hid_t file = static_cast<hid_t>(file_id_);
    std::vector<std::pair<std::string, std::string>> out;
    for (const std::string& name : hdf5::attribute_names(file))
      out.emplace_back(name, hdf5::attribute_text(file, name));
    return out;
  });
}

std::optional<std::string> RolloutFile::attribute(const std::string& name) const {
  hdf5::Lock lock;
  return guarded(path_, [&]() -> std::optional<std::string> {
    const hid_t file = static_cast<hid_t>(file_id_);
    if (!hdf5::has_attribute(file, name)) return std::nullopt;
    return hdf5::attribute_text(file, name);
  });
}

std::optional<std::vector<std::string>> RolloutFile::string_list_attribute(const std::string& name) const {
  hdf5::Lock lock;
  return guarded(path_, [&]() -> std::optional<std::vector<std::string>> {
    const hid_t file = static_cast<hid_t>(file_id_);
    if (!hdf5::has_attribute(file, name)) return std::nullopt;
    const Handle attribute(H5Aopen(file, name.c_str(), H5P_DEFAULT), "open attribute '" + name + "'");
    const Handle type(H5Aget_type(attribute.get()), "type of attribute '" + name + "'");
    if (H5Tget_class(type.get()) != H5T_STRING) return std::nullopt;
    return hdf5::read_strings_attribute(file, name);
  });
}

std::vector<std::string> RolloutFile::dataset_names() const {
  hdf5::Lock lock;
  return guarded(path_, [&] { return dataset_names_locked(); });
}

std::vector<std::string> RolloutFile::dataset_names_locked() const {
  const hid_t file = static_cast<hid_t>(file_id_);
  H5G_info_t group;
  hdf5::check(H5Gget_info(file, &group), "list datasets");
  // Creation order where the file tracks it (ours do), else by name; both through calls that
  // are the same in every HDF5 version since 1.8.
  H5_index_t order = H5_INDEX_CRT_ORDER;
  if (group.nlinks > 0 && H5Lget_name_by_idx(file, ".", order, H5_ITER_INC, 0, nullptr, 0, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    order = H5_INDEX_NAME;
  }
  std::vector<std::string> datasets;
  for (hsize_t k = 0; k < group.nlinks; ++k) {
    const ssize_t length = H5Lget_name_by_idx(file, ".", order, H5_ITER_INC, k, nullptr, 0, H5P_DEFAULT);
    hdf5::check(length, "list datasets");
    std::string name(static_cast<std::size_t>(length) + 1, '\0');
    hdf5::check(H5Lget_name_by_idx(file, ".", order, H5_ITER_INC, k, name.data(), name.size(), H5P_DEFAULT),
                "list datasets");
    name.resize(static_cast<std::size_t>(length));
    // A link to an object that cannot be opened is damage, not a dataset to leave out.
    const hid_t object = H5Oopen(file, name.c_str(), H5P_DEFAULT);
    hdf5::check(object, "open '" + name + "'");
    if (H5Iget_type(object) == H5I_DATASET) datasets.push_back(name);
    H5Oclose(object);
  }
  return datasets;
}

bool RolloutFile::has_dataset(const std::string& name) const {
  const std::vector<std::string> names = dataset_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::vector<DatasetInfo> RolloutFile::datasets() const {
  const std::vector<std::string> names = dataset_names();
  hdf5::Lock lock;
  return guarded(path_, [&] { return dataset_infos(names); });
}

std::vector<DatasetInfo> RolloutFile::dataset_infos(const std::vector<std::string>& names) const {
  const hid_t file = static_cast<hid_t>(file_id_);
  std::vector<DatasetInfo> infos;
  for (const std::string& name : names) {
    Handle dataset(H5Dopen2(file, name.c_str(), H5P_DEFAULT), "open dataset '" + name + "'");
    DatasetInfo info;
    info.name = name;
    Handle type(H5Dget_type(dataset.get()), "type of '" + name + "'");
    info.dtype = dtype_name(type.get());
    info.raw_bytes = static_cast<std::int64_t>(H5Tget_size(type.get()));
    for (hsize_t d : hdf5::dataset_dims(dataset.get())) {
      info.shape.push_back(static_cast<std::int64_t>(d));
      info.raw_bytes *= static_cast<std::int64_t>(d);
    }
    info.stored_bytes = static_cast<std::int64_t>(H5Dget_storage_size(dataset.get()));
    Handle properties(H5Dget_create_plist(dataset.get()), "properties of '" + name + "'");
    if (H5Pget_layout(properties.get()) == H5D_CHUNKED) {
      std::vector<hsize_t> chunk(info.shape.size());
      hdf5::check(H5Pget_chunk(properties.get(), static_cast<int>(chunk.size()), chunk.data()),
                  "chunk of '" + name + "'");
      for (hsize_t c : chunk) info.chunk.push_back(static_cast<std::int64_t>(c));
    }
    const int filter_count = H5Pget_nfilters(properties.get());
    for (int k = 0; k < filter_count; ++k) {
      unsigned flags = 0, config = 0;
      unsigned values[8] = {};
      std::size_t value_count = 8;
      char filter_name[64] = {};
      const H5Z_filter_t filter = H5Pget_filter2(properties.get(), static_cast<unsigned>(k), &flags, &value_count,
                                                 values, sizeof filter_name, filter_name, &config);
      if (filter == H5Z_FILTER_DEFLATE) {
        info.filters.push_back("deflate(" + std::to_string(value_count ? values[0] : 0) + ")");
      } else if (filter == H5Z_FILTER_SHUFFLE) {
        info.filters.push_back("shuffle");
      } else {
        info.filters.push_back(filter_name[0] ? filter_name : "filter " + std::to_string(filter));
      }
    }
    if (hdf5::has_attribute(dataset.get(), "axes")) info.axes = hdf5::attribute_text(dataset.get(), "axes");
    if (hdf5::has_attribute(dataset.get(), "description"))
      info.description = hdf5::attribute_text(dataset.get(), "description");
    infos.push_back(std::move(info));
  }
  return infos;
}

std::int64_t RolloutFile::row_of_iteration(std::int64_t iteration) const {
  const auto found = std::lower_bound(iterations_.begin(), iterations_.end(), iteration);
  if (found != iterations_.end() && *found == iteration) return found - iterations_.begin();
  std::string nearest;
  if (iterations_.empty()) {
    nearest = "it logged no complete iteration";
  } else if (found == iterations_.begin()) {
    nearest = "the first logged iteration is " + std::to_string(*found);
  } else if (found == iterations_.end()) {
    nearest = "the last logged iteration is " + std::to_string(iterations_.back());
  } else {
    nearest = "the nearest logged iterations are " + std::to_string(*(found - 1)) + " and " + std::to_string(*found);
  }
  throw InputError("iteration " + std::to_string(iteration) + " is not in '" + path_ + "': " + nearest +
                   " ('surge h5 info " + path_ + "' lists them all)");
}

DatasetValues RolloutFile::read(const std::string& name, std::optional<std::int64_t> row) const {
  const std::vector<std::string> names = dataset_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw InputError("'" + path_ + "' has no dataset '" + name + "'; it has " + joined(names));
  hdf5::Lock lock;
  return guarded(path_, [&] { return read_locked(name, row); });
}

DatasetValues RolloutFile::read_locked(const std::string& name, std::optional<std::int64_t> row) const {
  Handle dataset(H5Dopen2(static_cast<hid_t>(file_id_), name.c_str(), H5P_DEFAULT), "open dataset '" + name + "'");
  const std::vector<hsize_t> dims = hdf5::dataset_dims(dataset.get());
  std::vector<hsize_t> start(dims.size(), 0), count = dims;
  const bool per_iteration = name != kEnvIdDataset && !dims.empty();
  if (per_iteration) {
    count[0] = std::min<hsize_t>(dims[0], iterations_.size());  // complete rows only
    if (row) {
      SURGE_CHECK(*row >= 0 && static_cast<std::size_t>(*row) < iterations_.size(), "row out of range");
      start[0] = static_cast<hsize_t>(*row);
      count[0] = 1;
    }
  }
  DatasetValues out;
  std::size_t total = 1;
  for (std::size_t k = 0; k < count.size(); ++k) {
    if (!(per_iteration && row && k == 0)) out.shape.push_back(static_cast<std::int64_t>(count[k]));
    total *= count[k];
  }
  constexpr std::size_t max_values = std::size_t(1) << 31;  // 16 GiB as doubles
  for (hsize_t c : count)
    if (c > max_values)
      throw InputError("'" + path_ + "': dataset '" + name + "' is shaped " + dims_text(dims) +
                       ", more than surge h5 reads; the file is damaged, or export one iteration (--iteration)");
  if (total > max_values)
    throw InputError("'" + path_ + "': dataset '" + name + "' holds " + std::to_string(total) +
                     " values, more than surge h5 reads at once; export one iteration (--iteration)");
  out.values.resize(total);
  if (total == 0) return out;
  Handle file_space(H5Dget_space(dataset.get()), "dataspace of '" + name + "'");
  if (!dims.empty())
    hdf5::check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
                "select rows of '" + name + "'");
  Handle memory_space(
      dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
      "memory space");
  hdf5::check(
      H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, memory_space.get(), file_space.get(), H5P_DEFAULT, out.values.data()),
      "read '" + name + "'");
  return out;
}

}  // namespace surge::rl
