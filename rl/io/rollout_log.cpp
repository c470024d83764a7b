#include "rl/io/rollout_log.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "rl/io/hdf5_util.hpp"
#include "rl/io/rollout_schema.hpp"
#include "sim/error.hpp"
#include "sim/transfer.hpp"

namespace surge::rl {

std::size_t log_dtype_size(LogDtype dtype) {
  switch (dtype) {
    case LogDtype::Float32: return 4;
    case LogDtype::Float64: return 8;
    case LogDtype::Int32: return 4;
    case LogDtype::Int64: return 8;
    case LogDtype::UInt8: return 1;
  }
  return 0;
}

const char* log_dtype_name(LogDtype dtype) {
  switch (dtype) {
    case LogDtype::Float32: return "float32";
    case LogDtype::Float64: return "float64";
    case LogDtype::Int32: return "int32";
    case LogDtype::Int64: return "int64";
    case LogDtype::UInt8: return "uint8";
  }
  return "?";
}

namespace {

using hdf5::dataset_dims;
using hdf5::Handle;

hid_t memory_type(LogDtype dtype) {
  switch (dtype) {
    case LogDtype::Float32: return H5T_NATIVE_FLOAT;
    case LogDtype::Float64: return H5T_NATIVE_DOUBLE;
    case LogDtype::Int32: return H5T_NATIVE_INT32;
    case LogDtype::Int64: return H5T_NATIVE_INT64;
    case LogDtype::UInt8: return H5T_NATIVE_UINT8;
  }
  return H5T_NATIVE_UINT8;
}

hid_t file_type(LogDtype dtype) {
  switch (dtype) {
    case LogDtype::Float32: return H5T_IEEE_F32LE;
    case LogDtype::Float64: return H5T_IEEE_F64LE;
    case LogDtype::Int32: return H5T_STD_I32LE;
    case LogDtype::Int64: return H5T_STD_I64LE;
    case LogDtype::UInt8: return H5T_STD_U8LE;
  }
  return H5T_STD_U8LE;
}

std::int64_t item_count(const LogField& field) {
  std::int64_t count = 1;
  for (std::int64_t d : field.item_shape) count *= d;
  return count;
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

// Chunks of about 64 KiB to 1 MiB: several logged iterations per chunk when one is small, one
// iteration split along the env axis when it is large.
std::vector<hsize_t> chunk_dims(const std::vector<hsize_t>& row, std::size_t element_bytes, std::size_t env_axis) {
  constexpr std::size_t small_chunk = 64 << 10, large_chunk = 1 << 20;
  std::size_t row_bytes = element_bytes;
  for (hsize_t d : row) row_bytes *= d;
  std::vector<hsize_t> chunk{1};
  chunk.insert(chunk.end(), row.begin(), row.end());
  if (row_bytes == 0) return chunk;
  if (row_bytes < small_chunk) {
    chunk[0] = std::clamp<hsize_t>(small_chunk / row_bytes, 1, 1024);
  } else if (row_bytes > large_chunk) {
    const std::size_t bytes_per_env = row_bytes / row[env_axis];
    chunk[1 + env_axis] = std::max<hsize_t>(1, large_chunk / std::max<std::size_t>(bytes_per_env, 1));
  }
  return chunk;
}

Handle creation_properties(const std::vector<hsize_t>& chunk, int deflate_level) {
  Handle properties(H5Pcreate(H5P_DATASET_CREATE), "dataset properties");
  hdf5::check(H5Pset_chunk(properties.get(), static_cast<int>(chunk.size()), chunk.data()), "set chunk shape");
  hdf5::check(H5Pset_shuffle(properties.get()), "set the shuffle filter");
  if (deflate_level > 0) hdf5::check(H5Pset_deflate(properties.get(), static_cast<unsigned>(deflate_level)), "set deflate");
  hdf5::check(H5Pset_attr_creation_order(properties.get(), H5P_CRT_ORDER_TRACKED), "track attribute order");
  return properties;
}

Handle create_extendable(hid_t file, const std::string& name, LogDtype dtype, const std::vector<hsize_t>& row,
                         std::size_t env_axis, int deflate_level) {
  std::vector<hsize_t> dims{0}, max_dims{H5S_UNLIMITED};
  dims.insert(dims.end(), row.begin(), row.end());
  max_dims.insert(max_dims.end(), row.begin(), row.end());
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), max_dims.data()), "dataspace of " + name);
  Handle properties = creation_properties(chunk_dims(row, log_dtype_size(dtype), env_axis), deflate_level);
  return Handle(H5Dcreate2(file, name.c_str(), file_type(dtype), space.get(), H5P_DEFAULT, properties.get(), H5P_DEFAULT),
                "create dataset '" + name + "'");
}

// Writes one row (everything after the iteration axis) at index `row_index`, growing the dataset.
void append_row(hid_t dataset, std::int64_t row_index, LogDtype dtype, const void* values, const std::string& name) {
  std::vector<hsize_t> dims = dataset_dims(dataset);
  dims[0] = static_cast<hsize_t>(row_index + 1);
  hdf5::check(H5Dset_extent(dataset, dims.data()), "grow dataset '" + name + "'");
  Handle file_space(H5Dget_space(dataset), "dataspace of " + name);
  std::vector<hsize_t> start(dims.size(), 0), count = dims;
  start[0] = static_cast<hsize_t>(row_index);
  count[0] = 1;
  hdf5::check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
              "select a row of '" + name + "'");
  Handle memory_space(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), "memory space");
  hdf5::check(H5Dwrite(dataset, memory_type(dtype), memory_space.get(), file_space.get(), H5P_DEFAULT, values),
              "write '" + name + "'");
}

std::string human_bytes(std::int64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

void write_attribute(hid_t object, const LogAttribute& attribute) {
  std::visit(
      [&](const auto& value) {
        using V = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<V, std::string>) hdf5::write_string_attribute(object, attribute.name, value);
        if constexpr (std::is_same_v<V, std::int64_t>) hdf5::write_int_attribute(object, attribute.name, value);
        if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) hdf5::write_ints_attribute(object, attribute.name, value);
        if constexpr (std::is_same_v<V, std::vector<float>>) hdf5::write_floats_attribute(object, attribute.name, value);
        if constexpr (std::is_same_v<V, std::vector<std::string>>) hdf5::write_strings_attribute(object, attribute.name, value);
      },
      attribute.value);
}

}  // namespace

// ---- state shared by the training thread and the writer thread -------------------------------

struct Slot {
  std::vector<StagingBuffer> buffers;  // per field: [steps][M](item) or [M](item)
  Event begin_copied, end_copied;
  std::int64_t iteration = 0, global_step = 0;
};

struct RolloutLog::State {
  RolloutLogOptions options;
  std::vector<LogField> fields;
  std::vector<std::size_t> env_bytes;  // per field: bytes of one env's item
  Stream copy_stream;
  Event compute_mark;  // the point on the compute stream the copies wait for
  std::vector<Slot> slots;
  int filling = -1;  // the slot being filled between begin_iteration and end_iteration
  std::size_t staging_bytes = 0;

  // HDF5 objects: touched by the constructor, then only by the writer thread, then by close().
  Handle file;
  std::vector<Handle> datasets;  // per field
  Handle iteration_dataset, global_step_dataset;
  std::int64_t rows = 0;          // iterations on disk
  std::int64_t reserve_bytes = 0;
  std::chrono::steady_clock::time_point last_flush = std::chrono::steady_clock::now();
  std::int64_t dropped_earlier = 0;  // counted by the run this one resumes

  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<int> queue;       // slots waiting for the writer, oldest first
  std::vector<int> free_slots;
  bool stopping = false;
  std::atomic<bool> closed{false};
  std::atomic<bool> failed{false};
  std::string error;
  std::int64_t written = 0, dropped = 0;
  std::thread writer;

  ~State() {  // normally all closed by close(); not so when the constructor gave up half way
    hdf5::Lock lock;
    datasets.clear();
    iteration_dataset.reset();
    global_step_dataset.reset();
    file.reset();
  }

  void open_file();
  void reopen_for_resume();
  void write_slot(const Slot& slot);
  void writer_loop();
  void write_or_stop(const Slot& slot);
  void fail(const std::string& message);
  std::int64_t room_left() const;
  void finish_file();
};

namespace {

void validate(const RolloutLogOptions& o, const std::vector<LogField>& fields) {
  const std::string where = "rollout log '" + o.path + "'";
  if (o.path.empty()) throw InputError("the rollout log needs a file name (--log-rollouts FILE.h5)");
  if (o.log_envs < 1 || o.first_env < 0 || o.first_env + o.log_envs > o.num_envs)
    throw InputError(where + ": cannot log " + std::to_string(o.log_envs) + " environments starting at env " +
                     std::to_string(o.first_env) + " of " + std::to_string(o.num_envs) + "; use --log-envs 1.." +
                     std::to_string(o.num_envs));
  if (o.every < 1) throw InputError(where + ": --log-every must be at least 1");
  if (o.queue_depth < 1 || o.queue_depth > 64) throw InputError(where + ": the queue depth must be 1..64");
  if (o.deflate_level < 0 || o.deflate_level > 9) throw InputError(where + ": the deflate level must be 0..9");
  SURGE_CHECK(!fields.empty(), "a rollout log needs fields");
  std::vector<std::string> names;
  for (const LogField& field : fields) {
    SURGE_CHECK(!field.name.empty() && field.data, "log field '" + field.name + "' has no name or no data");
    SURGE_CHECK(field.steps >= 0, "log field '" + field.name + "' has negative steps");
    for (std::int64_t d : field.item_shape) SURGE_CHECK(d >= 1, "log field '" + field.name + "' has an empty axis");
    SURGE_CHECK(field.name != kIterationDataset && field.name != kGlobalStepDataset && field.name != kEnvIdDataset,
                "log field '" + field.name + "' takes a reserved name");
    SURGE_CHECK(std::find(names.begin(), names.end(), field.name) == names.end(), "log field '" + field.name + "' twice");
    names.push_back(field.name);
  }
}

}  // namespace

void RolloutLog::State::open_file() {
  Handle creation(H5Pcreate(H5P_FILE_CREATE), "file properties");
  hdf5::check(H5Pset_attr_creation_order(creation.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED), "attribute order");
  hdf5::check(H5Pset_link_creation_order(creation.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED), "dataset order");
  const hid_t id = H5Fcreate(options.path.c_str(), H5F_ACC_TRUNC, creation.get(), H5P_DEFAULT);
  if (id < 0)
    throw InputError("cannot create the rollout log '" + options.path + "' (" + hdf5::error_stack() +
                     "): check that its folder exists and is writable");
  file = Handle(id, "create file");
  const hid_t root = file.get();
  hdf5::write_string_attribute(root, kSchemaAttribute, kSchemaName);
  hdf5::write_int_attribute(root, kSchemaVersionAttribute, kRolloutLogSchemaVersion);
  hdf5::write_int_attribute(root, "log_every", options.every);
  hdf5::write_int_attribute(root, kFirstIterationAttribute, options.first_iteration);
  hdf5::write_int_attribute(root, "num_envs", options.num_envs);
  hdf5::write_int_attribute(root, kDroppedAttribute, 0);
  for (const LogAttribute& attribute : options.attributes) write_attribute(root, attribute);

  std::vector<std::int64_t> env_ids(static_cast<std::size_t>(options.log_envs));
  for (std::int64_t m = 0; m < options.log_envs; ++m) env_ids[static_cast<std::size_t>(m)] = options.first_env + m;
  const hsize_t env_count = env_ids.size();
  Handle env_space(H5Screate_simple(1, &env_count, nullptr), "env_id space");
  Handle env_dataset(H5Dcreate2(root, kEnvIdDataset, H5T_STD_I64LE, env_space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     "create dataset 'env_id'");
  hdf5::check(H5Dwrite(env_dataset.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, env_ids.data()), "write env_id");
  hdf5::write_string_attribute(env_dataset.get(), "description", "the environments logged, by index in the run");

  iteration_dataset = create_extendable(root, kIterationDataset, LogDtype::Int64, {}, 0, options.deflate_level);
  hdf5::write_string_attribute(iteration_dataset.get(), "description",
                               "the training iteration of each logged row; its length is the number of complete rows");
  global_step_dataset = create_extendable(root, kGlobalStepDataset, LogDtype::Int64, {}, 0, options.deflate_level);
  hdf5::write_string_attribute(global_step_dataset.get(), "description",
                               "environment steps taken by the whole run at the end of that iteration");
  for (const LogField& field : fields) {
    const std::size_t env_axis = field.steps > 0 ? 1 : 0;
    datasets.push_back(create_extendable(root, field.name, field.dtype, row_dims(field, options.log_envs), env_axis,
                                         options.deflate_level));
    hdf5::write_string_attribute(datasets.back().get(), "axes", axes_text(field));
    if (!field.description.empty()) hdf5::write_string_attribute(datasets.back().get(), "description", field.description);
  }
  hdf5::check(H5Fflush(root, H5F_SCOPE_LOCAL), "flush");
}

void RolloutLog::State::reopen_for_resume() {
  const std::string& path = options.path;
  auto refuse = [&](const std::string& why) {
    throw InputError("cannot resume the rollout log '" + path + "': " + why + "; log to a new file instead");
  };
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    refuse("it is not an HDF5 file");
  }
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (id < 0) refuse("it cannot be opened for writing (" + hdf5::error_stack() + ")");
  file = Handle(id, "open file");
  const hid_t root = file.get();
  if (!hdf5::has_attribute(root, kSchemaAttribute) || hdf5::read_string_attribute(root, kSchemaAttribute) != kSchemaName)
    refuse("it is not a Surge rollout log");
  if (hdf5::read_int_attribute(root, kSchemaVersionAttribute) != kRolloutLogSchemaVersion)
    refuse("it has another schema version");
  if (hdf5::read_int_attribute(root, "log_every") != options.every) refuse("it was logged with another --log-every");
  dropped_earlier = hdf5::has_attribute(root, kDroppedAttribute) ? hdf5::read_int_attribute(root, kDroppedAttribute) : 0;

  auto open = [&](const std::string& name) {
    if (H5Lexists(root, name.c_str(), H5P_DEFAULT) <= 0) refuse("it has no dataset '" + name + "'");
    return Handle(H5Dopen2(root, name.c_str(), H5P_DEFAULT), "open dataset '" + name + "'");
  };
  {
    Handle env_dataset = open(kEnvIdDataset);
    const std::vector<hsize_t> dims = dataset_dims(env_dataset.get());
    std::vector<std::int64_t> env_ids(dims.size() == 1 ? dims[0] : 0);
    if (env_ids.size() != static_cast<std::size_t>(options.log_envs)) refuse("it logged another number of environments");
    hdf5::check(H5Dread(env_dataset.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, env_ids.data()), "read env_id");
    if (env_ids.front() != options.first_env) refuse("it logged other environments");
  }
  iteration_dataset = open(kIterationDataset);
  global_step_dataset = open(kGlobalStepDataset);
  for (const LogField& field : fields) {
    datasets.push_back(open(field.name));
    std::vector<hsize_t> dims = dataset_dims(datasets.back().get());
    dims.erase(dims.begin());
    Handle type(H5Dget_type(datasets.back().get()), "type of " + field.name);
    if (dims != row_dims(field, options.log_envs) || H5Tequal(type.get(), file_type(field.dtype)) <= 0)
      refuse("its dataset '" + field.name + "' has another shape or type");
  }

  // Keep the rows logged before the resumed iteration; drop later ones and any partial row.
  const hsize_t logged = dataset_dims(iteration_dataset.get())[0];
  std::vector<std::int64_t> iterations(logged);
  if (logged > 0)
    hdf5::check(H5Dread(iteration_dataset.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, iterations.data()),
                "read iteration");
  rows = std::lower_bound(iterations.begin(), iterations.end(), options.resume_iteration) - iterations.begin();
  auto shrink = [&](hid_t dataset) {
    std::vector<hsize_t> dims = dataset_dims(dataset);
    dims[0] = static_cast<hsize_t>(rows);
    hdf5::check(H5Dset_extent(dataset, dims.data()), "cut back the rollout log");
  };
  shrink(iteration_dataset.get());
  shrink(global_step_dataset.get());
  for (const Handle& dataset : datasets) shrink(dataset.get());
  hdf5::check(H5Fflush(root, H5F_SCOPE_LOCAL), "flush");
}

// Bytes the file may still grow by: the free space of its file system for unprivileged users, and
// what the process's file-size limit leaves.
std::int64_t RolloutLog::State::room_left() const {
  std::int64_t room = INT64_MAX;
  struct statvfs volume {};
  if (::statvfs(options.path.c_str(), &volume) == 0)
    room = static_cast<std::int64_t>(volume.f_bavail) * static_cast<std::int64_t>(volume.f_frsize);
  struct rlimit limit {};
  struct stat status {};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && ::stat(options.path.c_str(), &status) == 0)
    room = std::min(room, static_cast<std::int64_t>(limit.rlim_cur) - static_cast<std::int64_t>(status.st_size));
  return room;
}

void RolloutLog::State::write_slot(const Slot& slot) {
  hdf5::Lock hdf5_lock;
  // Fields first and the iteration index last: a row counts once `iteration` covers it, so a crash
  // between the two leaves no half-written row that readers would take for whole.
  for (std::size_t f = 0; f < fields.size(); ++f)
    append_row(datasets[f].get(), rows, fields[f].dtype, slot.buffers[f].data(), fields[f].name);
  append_row(global_step_dataset.get(), rows, LogDtype::Int64, &slot.global_step, kGlobalStepDataset);
  append_row(iteration_dataset.get(), rows, LogDtype::Int64, &slot.iteration, kIterationDataset);
  ++rows;
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_flush).count() >= options.flush_seconds) {
    hdf5::check(H5Fflush(file.get(), H5F_SCOPE_LOCAL), "flush");
    last_flush = now;
  }
}

void RolloutLog::State::fail(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (failed) return;
    error = message;
    failed = true;
  }
  if (options.on_error) {
    options.on_error(message);
  } else {
    std::fprintf(stderr, "surge: %s\n", message.c_str());
  }
  // Let go of the file now: a full disk should not also keep the file open until training ends.
  hdf5::Lock hdf5_lock;
  datasets.clear();
  iteration_dataset.reset();
  global_step_dataset.reset();
  file.reset();
  H5Eclear2(H5E_DEFAULT);
}

void RolloutLog::State::writer_loop() {
  for (;;) {
    int index = -1;
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty()) return;  // stopping, and everything queued is written
      index = queue.front();
      queue.pop_front();
    }
    const Slot& slot = slots[static_cast<std::size_t>(index)];
    if (!failed) write_or_stop(slot);
    std::lock_guard<std::mutex> lock(mutex);
    free_slots.push_back(index);
  }
}

void RolloutLog::State::write_or_stop(const Slot& slot) {
  const std::string stopped = "rollout log '" + options.path + "' stopped at iteration " + std::to_string(slot.iteration);
  try {
    slot.end_copied.synchronize();  // the copies into the staging buffers are done
    if (options.before_write) options.before_write(slot.iteration);
    if (const std::int64_t room = room_left(); room < reserve_bytes) {
      // Close while there is still room for HDF5 to finish the file; a write that fails for want
      // of space could leave it unreadable.
      finish_file();
      fail(stopped + ": only " + human_bytes(std::max<std::int64_t>(room, 0)) + " of disk left for it (" +
           human_bytes(reserve_bytes) + " kept in reserve); the file is closed, whole, with " +
           std::to_string(written) + " iterations; training goes on without it");
      return;
    }
    write_slot(slot);
    std::lock_guard<std::mutex> lock(mutex);
    ++written;
  } catch (const std::exception& e) {
    fail(stopped + ": " + e.what() + "; training goes on without it (" + std::to_string(written) +
         " iterations were logged before the error)");
  }
}

void RolloutLog::State::finish_file() {
  hdf5::Lock hdf5_lock;
  if (!file) return;
  hdf5::write_int_attribute(file.get(), kDroppedAttribute, dropped_earlier + dropped);
  hdf5::check(H5Fflush(file.get(), H5F_SCOPE_LOCAL), "flush");
  datasets.clear();
  iteration_dataset.reset();
  global_step_dataset.reset();
  hdf5::check(file.close(), "close");
}

// ---- the training thread's side ---------------------------------------------------------------

RolloutLog::RolloutLog(RolloutLogOptions options, std::vector<LogField> fields) : state_(std::make_unique<State>()) {
  validate(options, fields);
  State& s = *state_;
  s.options = std::move(options);
  s.fields = std::move(fields);
  s.copy_stream = Stream(s.options.device);
  s.compute_mark = Event(s.options.device);

  std::size_t slot_bytes = 0;
  for (const LogField& field : s.fields) {
    s.env_bytes.push_back(static_cast<std::size_t>(item_count(field)) * log_dtype_size(field.dtype));
    slot_bytes += s.env_bytes.back() * static_cast<std::size_t>(s.options.log_envs * std::max<std::int64_t>(field.steps, 1));
  }
  s.staging_bytes = slot_bytes * static_cast<std::size_t>(s.options.queue_depth);
  // By default: room for four more iterations, plus HDF5's chunk cache (up to 1 MiB per dataset)
  // that the closing flush writes out, plus 1 MiB of metadata.
  const auto datasets = static_cast<std::int64_t>(s.fields.size()) + 2;
  s.reserve_bytes = s.options.reserve_bytes >= 0
                        ? s.options.reserve_bytes
                        : 4 * static_cast<std::int64_t>(slot_bytes) + (datasets + 1) * (std::int64_t(1) << 20);
  constexpr std::size_t staging_limit = std::size_t(8) << 30;
  if (s.staging_bytes > staging_limit)
    throw InputError("rollout log '" + s.options.path + "': staging " + std::to_string(s.options.queue_depth) +
                     " iterations of " + std::to_string(slot_bytes >> 20) + " MiB exceeds 8 GiB of host memory; log fewer "
                     "environments (--log-envs)");

  {
    hdf5::Lock hdf5_lock;
    try {
      const bool resume = s.options.resume_iteration >= 0 && std::filesystem::exists(s.options.path);
      resume ? s.reopen_for_resume() : s.open_file();
    } catch (...) {
      s.datasets.clear();
      s.iteration_dataset.reset();
      s.global_step_dataset.reset();
      s.file.reset();
      H5Eclear2(H5E_DEFAULT);
      throw;
    }
  }

  for (int k = 0; k < s.options.queue_depth; ++k) {
    Slot slot;
    for (const LogField& field : s.fields)
      slot.buffers.emplace_back(s.options.device, s.env_bytes[slot.buffers.size()] *
                                                      static_cast<std::size_t>(s.options.log_envs * std::max<std::int64_t>(field.steps, 1)));
    slot.begin_copied = Event(s.options.device);
    slot.end_copied = Event(s.options.device, /*blocking_sync=*/true);
    s.slots.push_back(std::move(slot));
    s.free_slots.push_back(k);
  }
  s.writer = std::thread([&s] { s.writer_loop(); });
}

RolloutLog::~RolloutLog() { close(); }

bool RolloutLog::wants(std::int64_t iteration) const {
  const State& s = *state_;
  return (iteration - s.options.first_iteration) % s.options.every == 0 && !s.failed && !s.closed;
}

namespace {

// Enqueues the copies of the fields captured at `when` into `slot`, ordered after the work on
// `compute`; later work on `compute` waits on the device until they are done.
void stage_fields(const RolloutLogOptions& options, const std::vector<LogField>& fields,
                  const std::vector<std::size_t>& env_bytes, LogCapture when, Slot& slot, Event& compute_mark,
                  Event& copied, const Stream& copy_stream, const Stream& compute) {
  bool any = false;
  for (const LogField& field : fields) any = any || field.capture == when;
  if (!any) return;
  compute_mark.record(compute);
  compute_mark.wait(copy_stream);
  for (std::size_t f = 0; f < fields.size(); ++f) {
    const LogField& field = fields[f];
    if (field.capture != when) continue;
    const std::size_t row_bytes = env_bytes[f] * static_cast<std::size_t>(options.log_envs);
    const std::size_t pitch = env_bytes[f] * static_cast<std::size_t>(options.num_envs);
    const auto* source = static_cast<const char*>(field.data) + env_bytes[f] * static_cast<std::size_t>(options.first_env);
    copy_rows(slot.buffers[f].data(), row_bytes, Device::cpu(), source, pitch, options.device, row_bytes,
              static_cast<std::size_t>(std::max<std::int64_t>(field.steps, 1)), copy_stream);
  }
  copied.record(copy_stream);
  copied.wait(compute);
}

}  // namespace

bool RolloutLog::begin_iteration(std::int64_t iteration, const Stream& stream) {
  State& s = *state_;
  SURGE_CHECK(s.filling < 0, "begin_iteration called twice without end_iteration");
  if (!wants(iteration)) return false;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.free_slots.empty()) {
      ++s.dropped;  // the writer is behind: drop this iteration whole rather than wait for it
      return false;
    }
    s.filling = s.free_slots.back();
    s.free_slots.pop_back();
  }
  Slot& slot = s.slots[static_cast<std::size_t>(s.filling)];
  slot.iteration = iteration;
  stage_fields(s.options, s.fields, s.env_bytes, LogCapture::AtBegin, slot, s.compute_mark, slot.begin_copied,
               s.copy_stream, stream);
  return true;
}

void RolloutLog::end_iteration(std::int64_t global_step, const Stream& stream) {
  State& s = *state_;
  if (s.filling < 0) return;
  Slot& slot = s.slots[static_cast<std::size_t>(s.filling)];
  slot.global_step = global_step;
  stage_fields(s.options, s.fields, s.env_bytes, LogCapture::AtEnd, slot, s.compute_mark, slot.end_copied,
               s.copy_stream, stream);
  // With nothing captured at the end, the writer still waits for the copies made at the beginning.
  if (std::none_of(s.fields.begin(), s.fields.end(), [](const LogField& f) { return f.capture == LogCapture::AtEnd; }))
    slot.end_copied.record(s.copy_stream);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.queue.push_back(s.filling);
  }
  s.filling = -1;
  s.wake.notify_one();
}

void RolloutLog::close() noexcept {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.closed) return;
    s.closed = true;
    s.stopping = true;
    if (s.filling >= 0) s.free_slots.push_back(s.filling);  // begun but never ended: not logged
    s.filling = -1;
  }
  s.wake.notify_all();
  if (s.writer.joinable()) s.writer.join();
  if (s.failed) return;
  try {
    s.finish_file();
  } catch (const std::exception& e) {
    s.fail("rollout log '" + s.options.path + "' could not be closed cleanly: " + e.what());
  }
}

RolloutLogStats RolloutLog::stats() const {
  const State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  RolloutLogStats stats;
  stats.written = s.written;
  stats.dropped = s.dropped;
  stats.failed = s.failed;
  stats.error = s.error;
  stats.staging_bytes = s.staging_bytes;
  return stats;
}

const std::string& RolloutLog::path() const { return state_->options.path; }

}  // namespace surge::rl
