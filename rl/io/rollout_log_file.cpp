#include "rl/io/rollout_log_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <type_traits>
#include <variant>

#include "rl/io/hdf5_util.hpp"
#include "rl/io/rollout_file.hpp"
#include "rl/io/rollout_log_lock.hpp"
#include "rl/io/rollout_schema.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

using hdf5::dataset_dims;
using hdf5::Handle;

hdf5::ElementType element_type(LogDtype dtype) {
  switch (dtype) {
    case LogDtype::Float32: return hdf5::element_type<float>();
    case LogDtype::Float64: return hdf5::element_type<double>();
    case LogDtype::Int32: return hdf5::element_type<std::int32_t>();
    case LogDtype::Int64: return hdf5::element_type<std::int64_t>();
    case LogDtype::UInt8: return hdf5::element_type<std::uint8_t>();
  }
  throw Error("unknown log dtype");
}

// The dataset's dimensions after the iteration axis: [steps][M](item) or [M](item).
std::vector<hsize_t> row_dims(const LogField& field, std::int64_t log_envs) {
  std::vector<hsize_t> dims;
  if (field.steps > 0) dims.push_back(static_cast<hsize_t>(field.steps));
  dims.push_back(static_cast<hsize_t>(log_envs));
  for (std::int64_t d : field.item_shape) dims.push_back(static_cast<hsize_t>(d));
  return dims;
}

std::string axes_text(const LogField& field) {
  std::string axes = field.steps > 0 ? "[iteration][step][env]" : "[iteration][env]";
  for (std::int64_t d : field.item_shape) {  // appends: GCC 12 warns falsely (-Wrestrict) about "[" + string
    axes += '[';
    axes += std::to_string(d);
    axes += ']';
  }
  return axes;
}

// One logged iteration per chunk (split along the env axis above 1 MiB, or as the field asks): every
// chunk is written once, whole, and never rewritten, so a process killed at any moment cannot leave a
// chunk that earlier iterations share half rewritten.
std::vector<hsize_t> chunk_dims(const LogField& field, const std::vector<hsize_t>& row, std::size_t env_axis) {
  constexpr std::size_t large_chunk = 1 << 20;
  std::size_t row_bytes = log_dtype_size(field.dtype);
  for (hsize_t d : row) row_bytes *= d;
  std::vector<hsize_t> chunk{1};
  chunk.insert(chunk.end(), row.begin(), row.end());
  if (row_bytes > large_chunk) {
    const std::size_t bytes_per_env = row_bytes / row[env_axis];
    chunk[1 + env_axis] = std::max<hsize_t>(1, large_chunk / std::max<std::size_t>(bytes_per_env, 1));
  }
  if (field.chunk_envs > 0) chunk[1 + env_axis] = std::min<hsize_t>(row[env_axis], field.chunk_envs);
  if (field.chunk_steps > 0 && field.steps > 0) chunk[1] = std::min<hsize_t>(row[0], field.chunk_steps);
  return chunk;
}

// File access with the newest format: what SWMR writing needs (superblock version 3).
Handle latest_format_access() {
  Handle access(H5Pcreate(H5P_FILE_ACCESS), "file access properties");
  hdf5::check(H5Pset_libver_bounds(access.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST), "file format bounds");
  return access;
}

Handle create_extendable(hid_t file, const LogField& field, const std::vector<hsize_t>& row, std::size_t env_axis,
                         int deflate_level) {
  return hdf5::create_extendable_dataset(file, field.name, element_type(field.dtype).file, row,
                                         chunk_dims(field, row, env_axis), deflate_level);
}

// The index datasets, [I] of int64.
Handle create_index(hid_t file, const char* name, int deflate_level) {
  LogField field;
  field.name = name;
  field.dtype = LogDtype::Int64;
  return create_extendable(file, field, {}, 0, deflate_level);
}

void write_attribute(hid_t object, const LogAttribute& attribute) {
  std::visit(
      [&](const auto& value) {
        using V = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<V, std::string>) hdf5::write_string_attribute(object, attribute.name, value);
        if constexpr (std::is_same_v<V, std::int64_t>) hdf5::write_int_attribute(object, attribute.name, value);
        if constexpr (std::is_same_v<V, std::vector<std::int64_t>>)
          hdf5::write_ints_attribute(object, attribute.name, value);
        if constexpr (std::is_same_v<V, std::vector<float>>)
          hdf5::write_floats_attribute(object, attribute.name, value);
        if constexpr (std::is_same_v<V, std::vector<std::string>>)
          hdf5::write_strings_attribute(object, attribute.name, value);
      },
      attribute.value);
}

}  // namespace

struct RolloutLogFile::Datasets {
  Handle file;
  std::vector<Handle> fields;  // per field
  std::vector<std::string> names;
  std::vector<hid_t> memory_types;
  Handle iteration, global_step;
  // Iterations whose fields and global_step are written but not yet flushed: `iteration` gets them
  // only after the flush has put those rows into the file.
  std::vector<std::int64_t> pending;
  std::int64_t written = 0;  // rows of the fields and global_step, pending ones included

  void create(const RolloutLogOptions& options, const std::vector<LogField>& log_fields);
  // Returns the rows kept.
  std::int64_t reopen(const RolloutLogOptions& options, const std::vector<LogField>& log_fields,
                      std::int64_t& dropped_earlier);
  void close_all() noexcept {
    fields.clear();
    iteration.reset();
    global_step.reset();
    file.reset();
  }
};

void RolloutLogFile::Datasets::create(const RolloutLogOptions& options, const std::vector<LogField>& log_fields) {
  // Laid out under a temporary name and moved into place once SWMR writing has started, so the
  // log's path never holds a file that a killed process left half laid out or outside SWMR.
  const std::string creating = options.path + ".creating";
  Handle creation(H5Pcreate(H5P_FILE_CREATE), "file properties");
  hdf5::check(H5Pset_attr_creation_order(creation.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED),
              "attribute order");
  hdf5::check(H5Pset_link_creation_order(creation.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED),
              "dataset order");
  const Handle access = latest_format_access();
  const hid_t id = H5Fcreate(creating.c_str(), H5F_ACC_TRUNC, creation.get(), access.get());
  if (id < 0)
    throw InputError("cannot create the rollout log '" + options.path + "' (" + hdf5::error_stack() +
                     "): check that its folder exists and is writable");
  file = Handle(id, "create file");
  try {
    const hid_t root = file.get();
    hdf5::write_string_attribute(root, kSchemaAttribute, kSchemaName);
    hdf5::write_int_attribute(root, kSchemaVersionAttribute, kRolloutLogSchemaVersion);
    hdf5::write_int_attribute(root, "log_every", options.every);
    hdf5::write_int_attribute(root, kFirstIterationAttribute, options.first_iteration);
    hdf5::write_int_attribute(root, "num_envs", options.num_envs);
    hdf5::write_int_attribute(root, kDroppedAttribute, 0);
    for (const LogAttribute& attribute : options.attributes) write_attribute(root, attribute);

    std::vector<std::int64_t> env_ids(static_cast<std::size_t>(options.log_envs));
    for (std::int64_t m = 0; m < options.log_envs; ++m)
      env_ids[static_cast<std::size_t>(m)] = options.env_id_base + options.first_env + m;
    const Handle env_dataset = hdf5::write_dataset(root, kEnvIdDataset, env_ids);
    hdf5::write_string_attribute(env_dataset.get(), "description", "the environments logged, by index in the run");

    iteration = create_index(root, kIterationDataset, options.deflate_level);
    hdf5::write_string_attribute(
        iteration.get(), "description",
        "the training iteration of each logged row; its length is the number of complete rows");
    global_step = create_index(root, kGlobalStepDataset, options.deflate_level);
    hdf5::write_string_attribute(global_step.get(), "description",
                                 "environment steps taken by the whole run at the end of that iteration");
    for (const LogField& field : log_fields) {
      const std::size_t env_axis = field.steps > 0 ? 1 : 0;
      fields.push_back(
          create_extendable(root, field, row_dims(field, options.log_envs), env_axis, options.deflate_level));
      hdf5::write_string_attribute(fields.back().get(), "axes", axes_text(field));
      if (!field.description.empty())
        hdf5::write_string_attribute(fields.back().get(), "description", field.description);
    }
    hdf5::check(H5Fflush(root, H5F_SCOPE_LOCAL), "flush");
    hdf5::check(H5Fstart_swmr_write(root), "start SWMR writing");
    if (std::rename(creating.c_str(), options.path.c_str()) != 0)
      throw InputError("cannot create the rollout log '" + options.path + "': " + std::strerror(errno));
  } catch (...) {
    close_all();
    std::remove(creating.c_str());
    throw;
  }
}

namespace {

// Opens an existing log for writing, in SWMR mode where its format allows (logs of this version);
// older logs are opened as they were written. A log whose writer was killed still carries the mark
// of an open SWMR writer, which HDF5 refuses to open over: the caller holds the log's lock, so no
// writer is left, and the mark is cleared (what `h5clear -s` does).
hid_t open_for_writing(const std::string& path) {
  const Handle access = latest_format_access();
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE, access.get());
  if (id >= 0) return id;
  H5Eclear2(H5E_DEFAULT);
  constexpr const char* clear_marks = "clear_status_flags";  // HDF5's own name for h5clear's switch
  if (H5Pexist(access.get(), clear_marks) > 0) {
    hbool_t clear = 1;
    if (H5Pset(access.get(), clear_marks, &clear) >= 0) {
      id = H5Fopen(path.c_str(), H5F_ACC_RDWR | H5F_ACC_SWMR_WRITE, access.get());
      if (id >= 0) return id;
    }
    H5Eclear2(H5E_DEFAULT);
  }
  return H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
}

}  // namespace

std::int64_t RolloutLogFile::Datasets::reopen(const RolloutLogOptions& options, const std::vector<LogField>& log_fields,
                                              std::int64_t& dropped_earlier) {
  const std::string& path = options.path;
  auto refuse = [&](const std::string& why) {
    throw InputError("cannot resume the rollout log '" + path + "': " + why + "; log to a new file instead");
  };
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    refuse("it is not an HDF5 file");
  }
  const hid_t id = open_for_writing(path);
  if (id < 0) refuse("it cannot be opened for writing (" + hdf5::error_stack() + ")");
  file = Handle(id, "open file");
  const hid_t root = file.get();
  if (!hdf5::has_attribute(root, kSchemaAttribute) ||
      hdf5::read_string_attribute(root, kSchemaAttribute) != kSchemaName)
    refuse("it is not a Surge rollout log");
  if (hdf5::read_int_attribute(root, kSchemaVersionAttribute) != kRolloutLogSchemaVersion)
    refuse("it has another schema version");
  if (hdf5::read_int_attribute(root, "log_every") != options.every) refuse("it was logged with another --log-every");
  dropped_earlier =
      hdf5::has_attribute(root, kDroppedAttribute) ? hdf5::read_int_attribute(root, kDroppedAttribute) : 0;

  auto open = [&](const std::string& name) {
    if (H5Lexists(root, name.c_str(), H5P_DEFAULT) <= 0) refuse("it has no dataset '" + name + "'");
    return Handle(H5Dopen2(root, name.c_str(), H5P_DEFAULT), "open dataset '" + name + "'");
  };
  {
    Handle env_dataset = open(kEnvIdDataset);
    const std::vector<hsize_t> dims = dataset_dims(env_dataset.get());
    std::vector<std::int64_t> env_ids(dims.size() == 1 ? dims[0] : 0);
    if (env_ids.size() != static_cast<std::size_t>(options.log_envs))
      refuse("it logged another number of environments");
    hdf5::read_whole(env_dataset.get(), H5T_NATIVE_INT64, env_ids.data(), kEnvIdDataset);
    if (env_ids.front() != options.env_id_base + options.first_env) refuse("it logged other environments");
  }
  iteration = open(kIterationDataset);
  global_step = open(kGlobalStepDataset);
  hsize_t shortest = dataset_dims(global_step.get()).at(0);
  for (const LogField& field : log_fields) {
    fields.push_back(open(field.name));
    std::vector<hsize_t> dims = dataset_dims(fields.back().get());
    shortest = std::min(shortest, dims.at(0));
    dims.erase(dims.begin());
    Handle type(H5Dget_type(fields.back().get()), "type of " + field.name);
    if (dims != row_dims(field, options.log_envs) || H5Tequal(type.get(), element_type(field.dtype).file) <= 0)
      refuse("its dataset '" + field.name + "' has another shape or type");
  }

  // Keep the complete rows logged before the resumed iteration; drop later ones and any partial row.
  const std::vector<hsize_t> logged = dataset_dims(iteration.get());
  if (logged.size() != 1) refuse("its dataset 'iteration' is not one-dimensional");
  std::vector<std::int64_t> iterations(logged[0]);
  hdf5::read_whole(iteration.get(), H5T_NATIVE_INT64, iterations.data(), kIterationDataset);
  iterations.resize(std::min<std::size_t>(complete_prefix(iterations, options.first_iteration), shortest));
  const std::int64_t rows =
      std::lower_bound(iterations.begin(), iterations.end(), options.resume_iteration) - iterations.begin();
  auto shrink = [&](hid_t dataset) {
    std::vector<hsize_t> dims = dataset_dims(dataset);
    dims[0] = static_cast<hsize_t>(rows);
    hdf5::check(H5Dset_extent(dataset, dims.data()), "cut back the rollout log");
  };
  shrink(iteration.get());
  shrink(global_step.get());
  for (const Handle& dataset : fields) shrink(dataset.get());
  hdf5::check(H5Fflush(root, H5F_SCOPE_LOCAL), "flush");
  return rows;
}

RolloutLogFile::RolloutLogFile(const RolloutLogOptions& options, const std::vector<LogField>& fields)
    : datasets_(std::make_unique<Datasets>()) {
  // Before anything touches the file: a log another run is writing must stay whole.
  lock_ = std::make_unique<RolloutLogLock>(options.path);
  hdf5::Lock hdf5_lock;
  Datasets& d = *datasets_;
  for (const LogField& field : fields) {
    d.names.push_back(field.name);
    d.memory_types.push_back(element_type(field.dtype).memory);
  }
  try {
    const bool resume = options.resume_iteration >= 0 && std::filesystem::exists(options.path);
    if (resume) {
      rows_ = d.reopen(options, fields, dropped_earlier_);
    } else {
      d.create(options, fields);
    }
    d.written = rows_;
  } catch (...) {
    d.close_all();
    H5Eclear2(H5E_DEFAULT);
    lock_->release();
    throw;
  }
}

RolloutLogFile::~RolloutLogFile() { release(); }

void RolloutLogFile::append(const std::vector<const void*>& field_values, std::int64_t iteration,
                            std::int64_t global_step) {
  hdf5::Lock hdf5_lock;
  Datasets& d = *datasets_;
  SURGE_CHECK(d.file, "the rollout log's file is closed");
  for (std::size_t f = 0; f < d.fields.size(); ++f)
    hdf5::write_row(d.fields[f].get(), d.written, d.memory_types[f], field_values[f], d.names[f]);
  hdf5::write_row(d.global_step.get(), d.written, H5T_NATIVE_INT64, &global_step, kGlobalStepDataset);
  d.pending.push_back(iteration);
  ++d.written;
}

void RolloutLogFile::flush() {
  hdf5::Lock hdf5_lock;
  Datasets& d = *datasets_;
  if (!d.file) return;
  // The rows first, then the index that makes them count: whatever moment the process dies at, the
  // file's `iteration` covers only rows that reached it.
  for (const Handle& field : d.fields) hdf5::check(H5Dflush(field.get()), "flush");
  hdf5::check(H5Dflush(d.global_step.get()), "flush");
  for (const std::int64_t iteration : d.pending)
    hdf5::write_row(d.iteration.get(), rows_++, H5T_NATIVE_INT64, &iteration, kIterationDataset);
  d.pending.clear();
  hdf5::check(H5Fflush(d.file.get(), H5F_SCOPE_LOCAL), "flush");
}

void RolloutLogFile::finish(std::int64_t dropped) {
  if (!datasets_->file) return;
  flush();
  hdf5::Lock hdf5_lock;
  Datasets& d = *datasets_;
  // Rewritten in place: SWMR writing allows no new attributes.
  const std::int64_t total = dropped_earlier_ + dropped;
  Handle attribute(H5Aopen(d.file.get(), kDroppedAttribute, H5P_DEFAULT), "open attribute 'dropped_iterations'");
  hdf5::check(H5Awrite(attribute.get(), H5T_NATIVE_INT64, &total), "write attribute 'dropped_iterations'");
  attribute.reset();
  d.fields.clear();
  d.iteration.reset();
  d.global_step.reset();
  hdf5::check(d.file.close(), "close");
  lock_->release();
}

void RolloutLogFile::release() noexcept {
  if (!datasets_) return;
  {
    hdf5::Lock hdf5_lock;
    datasets_->close_all();
    H5Eclear2(H5E_DEFAULT);
  }
  if (lock_) lock_->release();
}

}  // namespace surge::rl
