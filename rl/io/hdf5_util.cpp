#include "rl/io/hdf5_util.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "rl/io/hdf5_read_guard.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"

namespace surge::rl::hdf5 {

std::mutex& library_mutex() {
  static std::mutex mutex;
  return mutex;
}

void quiet_errors() {
  // HDF5 closes whatever is still open when the process exits; a file whose close failed (a full
  // disk) can crash it there. Ours are closed explicitly, so its exit hook is not wanted. This must
  // come before the library starts; if something else started it first, the call just fails.
  static std::once_flag once;
  std::call_once(once, [] { H5dont_atexit(); });
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

namespace {

// "<function>: <description>" on one line. A failed system call's description is long (time,
// file descriptor, buffer address ...): it is cut to its first clause and the system's message.
herr_t collect_error(unsigned /*depth*/, const H5E_error2_t* error, void* entries) {
  std::string description = error->desc ? error->desc : "";
  const std::string marker = "error message = '";
  if (const auto at = description.find(marker); at != std::string::npos) {
    const auto end = description.find('\'', at + marker.size());
    const std::string system_message = description.substr(at + marker.size(), end - at - marker.size());
    description = description.substr(0, description.find(':')) + ": " + system_message;
  }
  for (char& c : description)
    if (c == '\n' || c == '\r') c = ' ';
  std::string entry = error->func_name ? error->func_name : "HDF5";
  if (!description.empty()) entry += ": " + description;
  static_cast<std::vector<std::string>*>(entries)->push_back(std::move(entry));
  return 0;
}

}  // namespace

std::string error_stack() {
  std::vector<std::string> entries;  // outermost (the API call) first
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &entries);
  H5Eclear2(H5E_DEFAULT);
  if (entries.empty()) return "HDF5 reported no detail";
  if (entries.size() == 1) return entries.front();
  return entries.front() + " / " + entries.back();  // what was asked, and what went wrong at the bottom
}

void check(std::int64_t status, const std::string& what) {
  if (status < 0) throw Error(what + ": " + error_stack());
}

Handle::Handle(hid_t id, const std::string& what) : id_(id) {
  if (id < 0) throw Error(what + ": " + error_stack());
}

herr_t Handle::close() noexcept {
  if (id_ < 0) return 0;
  herr_t status = 0;
  switch (H5Iget_type(id_)) {
    case H5I_FILE: status = H5Fclose(id_); break;
    case H5I_GROUP: status = H5Gclose(id_); break;
    case H5I_DATASET: status = H5Dclose(id_); break;
    case H5I_DATASPACE: status = H5Sclose(id_); break;
    case H5I_DATATYPE: status = H5Tclose(id_); break;
    case H5I_ATTR: status = H5Aclose(id_); break;
    case H5I_GENPROP_LST: status = H5Pclose(id_); break;
    default: status = H5Idec_ref(id_) < 0 ? -1 : 0; break;
  }
  id_ = H5I_INVALID_HID;
  return status;
}

namespace {

Handle utf8_string_type() {
  Handle type(H5Tcopy(H5T_C_S1), "string type");
  check(H5Tset_size(type.get(), H5T_VARIABLE), "string type");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "string type");
  return type;
}

// Replaces any attribute of that name, so that values such as counts can be updated.
Handle create_attribute(hid_t object, const std::string& name, hid_t type, hid_t space) {
  if (H5Aexists(object, name.c_str()) > 0) check(H5Adelete(object, name.c_str()), "replace attribute '" + name + "'");
  return Handle(H5Acreate2(object, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT),
                "create attribute '" + name + "'");
}

template <class T>
void write_array_attribute(hid_t object, const std::string& name, hid_t memory_type, hid_t file_type,
                           const std::vector<T>& values) {
  const hsize_t count = values.size();
  Handle space(H5Screate_simple(1, &count, nullptr), "attribute space");
  Handle attribute = create_attribute(object, name, file_type, space.get());
  check(H5Awrite(attribute.get(), memory_type, values.data()), "write attribute '" + name + "'");
}

// An object's path in its file, for messages: "/resume".
std::string object_path(hid_t object) {
  const ssize_t length = H5Iget_name(object, nullptr, 0);
  std::string path(length > 0 ? static_cast<std::size_t>(length) : 0, '\0');
  if (length > 0) H5Iget_name(object, path.data(), path.size() + 1);
  return path.empty() ? "/" : path;
}

// The path of `name` under `parent`: "/resume/optimizer".
std::string child_path(hid_t parent, const std::string& name) {
  const std::string path = object_path(parent);
  return (path.back() == '/' ? path : path + "/") + name;
}

}  // namespace

void write_string_attribute(hid_t object, const std::string& name, const std::string& value) {
  Handle type = utf8_string_type();
  Handle space(H5Screate(H5S_SCALAR), "attribute space");
  Handle attribute = create_attribute(object, name, type.get(), space.get());
  const char* text = value.c_str();
  check(H5Awrite(attribute.get(), type.get(), &text), "write attribute '" + name + "'");
}

void write_strings_attribute(hid_t object, const std::string& name, const std::vector<std::string>& values) {
  Handle type = utf8_string_type();
  std::vector<const char*> texts;
  for (const std::string& value : values) texts.push_back(value.c_str());
  write_array_attribute(object, name, type.get(), type.get(), texts);
}

void write_int_attribute(hid_t object, const std::string& name, std::int64_t value) {
  Handle space(H5Screate(H5S_SCALAR), "attribute space");
  Handle attribute = create_attribute(object, name, H5T_STD_I64LE, space.get());
  check(H5Awrite(attribute.get(), H5T_NATIVE_INT64, &value), "write attribute '" + name + "'");
}

void write_double_attribute(hid_t object, const std::string& name, double value) {
  Handle space(H5Screate(H5S_SCALAR), "attribute space");
  Handle attribute = create_attribute(object, name, H5T_IEEE_F64LE, space.get());
  check(H5Awrite(attribute.get(), H5T_NATIVE_DOUBLE, &value), "write attribute '" + name + "'");
}

void write_ints_attribute(hid_t object, const std::string& name, const std::vector<std::int64_t>& values) {
  write_array_attribute(object, name, H5T_NATIVE_INT64, H5T_STD_I64LE, values);
}

void write_floats_attribute(hid_t object, const std::string& name, const std::vector<float>& values) {
  write_array_attribute(object, name, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, values);
}

bool has_attribute(hid_t object, const std::string& name) { return H5Aexists(object, name.c_str()) > 0; }

namespace {

// Every element of a string attribute (scalar or array, fixed or variable length).
std::vector<std::string> read_strings(hid_t attribute, const std::string& name) {
  Handle type(H5Aget_type(attribute), "type of attribute '" + name + "'");
  Handle space(H5Aget_space(attribute), "space of attribute '" + name + "'");
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  check(count, "size of attribute '" + name + "'");
  std::vector<std::string> values;
  if (H5Tis_variable_str(type.get()) > 0) {
    Handle memory_type = utf8_string_type();
    std::vector<char*> texts(static_cast<std::size_t>(count), nullptr);
    {
      char file[512] = "";
      if (H5Fget_name(attribute, file, sizeof file) < 0) file[0] = '\0';
      hsize_t file_bytes = 0;
      if (const hid_t file_id = H5Iget_file_id(attribute); file_id >= 0) {
        if (H5Fget_filesize(file_id, &file_bytes) < 0) file_bytes = 0;
        H5Fclose(file_id);
      }
      const GuardedRead guard(file, file_bytes, name);
      check(H5Aread(attribute, memory_type.get(), texts.data()), "read attribute '" + name + "'");
    }
    for (char* text : texts) {
      values.emplace_back(text ? text : "");
      if (text) H5free_memory(text);
    }
  } else {
    const std::size_t size = H5Tget_size(type.get());
    std::vector<char> buffer(size * static_cast<std::size_t>(count) + 1, '\0');
    Handle memory_type(H5Tcopy(H5T_C_S1), "string type");
    check(H5Tset_size(memory_type.get(), size), "string type");
    check(H5Aread(attribute, memory_type.get(), buffer.data()), "read attribute '" + name + "'");
    for (hssize_t k = 0; k < count; ++k) {
      const char* start = buffer.data() + static_cast<std::size_t>(k) * size;
      std::size_t length = 0;
      while (length < size && start[length] != '\0') ++length;
      values.emplace_back(start, length);
    }
  }
  return values;
}

}  // namespace

std::string read_string_attribute(hid_t object, const std::string& name) {
  Handle attribute(H5Aopen(object, name.c_str(), H5P_DEFAULT), "open attribute '" + name + "'");
  Handle type(H5Aget_type(attribute.get()), "type of attribute '" + name + "'");
  if (H5Tget_class(type.get()) != H5T_STRING) throw Error("attribute '" + name + "' is not text");
  const std::vector<std::string> values = read_strings(attribute.get(), name);
  if (values.size() != 1)
    throw Error("attribute '" + name + "' holds " + std::to_string(values.size()) + " strings, not one");
  return values.front();
}

std::vector<std::string> read_strings_attribute(hid_t object, const std::string& name) {
  Handle attribute(H5Aopen(object, name.c_str(), H5P_DEFAULT), "open attribute '" + name + "'");
  Handle type(H5Aget_type(attribute.get()), "type of attribute '" + name + "'");
  if (H5Tget_class(type.get()) != H5T_STRING) throw Error("attribute '" + name + "' is not text");
  return read_strings(attribute.get(), name);
}

std::int64_t read_int_attribute(hid_t object, const std::string& name) {
  Handle attribute(H5Aopen(object, name.c_str(), H5P_DEFAULT), "open attribute '" + name + "'");
  Handle type(H5Aget_type(attribute.get()), "type of attribute '" + name + "'");
  Handle space(H5Aget_space(attribute.get()), "space of attribute '" + name + "'");
  if (H5Tget_class(type.get()) != H5T_INTEGER || H5Sget_simple_extent_npoints(space.get()) != 1)
    throw Error("attribute '" + name + "' is not one integer");
  std::int64_t value = 0;
  check(H5Aread(attribute.get(), H5T_NATIVE_INT64, &value), "read attribute '" + name + "'");
  return value;
}

double read_double_attribute(hid_t object, const std::string& name) {
  Handle attribute(H5Aopen(object, name.c_str(), H5P_DEFAULT), "open attribute '" + name + "'");
  Handle type(H5Aget_type(attribute.get()), "type of attribute '" + name + "'");
  Handle space(H5Aget_space(attribute.get()), "space of attribute '" + name + "'");
  const H5T_class_t type_class = H5Tget_class(type.get());
  if ((type_class != H5T_FLOAT && type_class != H5T_INTEGER) || H5Sget_simple_extent_npoints(space.get()) != 1)
    throw Error("attribute '" + name + "' is not one number");
  double value = 0.0;
  check(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value), "read attribute '" + name + "'");
  return value;
}

std::vector<std::int64_t> read_ints_attribute(hid_t object, const std::string& name, const std::string& path,
                                              std::size_t count) {
  Handle attribute(H5Aopen(object, name.c_str(), H5P_DEFAULT), "open attribute '" + name + "'");
  Handle type(H5Aget_type(attribute.get()), "type of attribute '" + name + "'");
  Handle space(H5Aget_space(attribute.get()), "space of attribute '" + name + "'");
  const hssize_t found = H5Sget_simple_extent_npoints(space.get());
  check(found, "size of attribute '" + name + "'");
  const bool integers = H5Tget_class(type.get()) == H5T_INTEGER;
  if (!integers || static_cast<std::size_t>(found) != count)
    throw InputError("'" + path + "': attribute '" + name + "' of " + object_path(object) + " holds " +
                     std::to_string(found) + (integers ? " integers" : " values that are not integers") + " where " +
                     std::to_string(count) +
                     " integers are expected; the file is damaged or was not written by this "
                     "version of surge");
  std::vector<std::int64_t> values(count);
  check(H5Aread(attribute.get(), H5T_NATIVE_INT64, values.data()), "read attribute '" + name + "'");
  return values;
}

std::vector<hsize_t> dataset_dims(hid_t dataset) {
  Handle space(H5Dget_space(dataset), "dataspace");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  check(rank, "rank");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), "dimensions");
  return dims;
}

std::string shape_text(const std::vector<hsize_t>& dims) {
  std::string text;
  for (hsize_t d : dims) {  // appends: GCC 12 warns falsely (-Wrestrict) about "[" + string
    text += '[';
    text += d == kAnyExtent ? "*" : std::to_string(d);
    text += ']';
  }
  return dims.empty() ? "[] (a scalar)" : text;
}

Handle write_dataset(hid_t parent, const std::string& name, ElementType type, const std::vector<hsize_t>& dims,
                     const void* values) {
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), "dataspace of '" + name + "'");
  Handle dataset(H5Dcreate2(parent, name.c_str(), type.file, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                 "create dataset '" + name + "'");
  std::size_t count = 1;
  for (hsize_t d : dims) count *= d;
  if (count > 0)
    check(H5Dwrite(dataset.get(), type.memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), "write dataset '" + name + "'");
  return dataset;
}

Handle create_extendable_dataset(hid_t parent, const std::string& name, hid_t file_type,
                                 const std::vector<hsize_t>& row, const std::vector<hsize_t>& chunk,
                                 int deflate_level) {
  std::vector<hsize_t> dims{0}, max_dims{H5S_UNLIMITED};
  dims.insert(dims.end(), row.begin(), row.end());
  max_dims.insert(max_dims.end(), row.begin(), row.end());
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), max_dims.data()), "dataspace of " + name);
  Handle properties(H5Pcreate(H5P_DATASET_CREATE), "dataset properties");
  check(H5Pset_chunk(properties.get(), static_cast<int>(chunk.size()), chunk.data()), "set chunk shape");
  check(H5Pset_shuffle(properties.get()), "set the shuffle filter");
  if (deflate_level > 0) check(H5Pset_deflate(properties.get(), static_cast<unsigned>(deflate_level)), "set deflate");
  check(H5Pset_attr_creation_order(properties.get(), H5P_CRT_ORDER_TRACKED), "track attribute order");
  return Handle(H5Dcreate2(parent, name.c_str(), file_type, space.get(), H5P_DEFAULT, properties.get(), H5P_DEFAULT),
                "create dataset '" + name + "'");
}

void write_row(hid_t dataset, std::int64_t row_index, hid_t memory_type, const void* values, const std::string& name) {
  std::vector<hsize_t> dims = dataset_dims(dataset);
  dims[0] = static_cast<hsize_t>(row_index + 1);
  check(H5Dset_extent(dataset, dims.data()), "grow dataset '" + name + "'");
  Handle file_space(H5Dget_space(dataset), "dataspace of " + name);
  std::vector<hsize_t> start(dims.size(), 0), count = dims;
  start[0] = static_cast<hsize_t>(row_index);
  count[0] = 1;
  check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
        "select a row of '" + name + "'");
  Handle memory_space(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), "memory space");
  check(H5Dwrite(dataset, memory_type, memory_space.get(), file_space.get(), H5P_DEFAULT, values),
        "write '" + name + "'");
}

Handle open_dataset(hid_t parent, const std::string& name, const std::string& path,
                    const std::vector<hsize_t>& expected) {
  const std::string where = "'" + path + "': dataset " + child_path(parent, name);
  const std::string way_out = "; the file is damaged or was not written by this version of surge";
  if (H5Lexists(parent, name.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError(where + " is missing" + way_out);
  }
  Handle dataset(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), "open dataset '" + name + "'");
  const std::vector<hsize_t> dims = dataset_dims(dataset.get());
  bool matches = dims.size() == expected.size();
  for (std::size_t k = 0; matches && k < dims.size(); ++k)
    matches = expected[k] == kAnyExtent || expected[k] == dims[k];
  if (!matches)
    throw InputError(where + " is shaped " + shape_text(dims) + " where " + shape_text(expected) + " is expected" +
                     way_out);
  return dataset;
}

void read_dataset_into(hid_t parent, const std::string& name, const std::string& path,
                       const std::vector<hsize_t>& expected, hid_t memory_type, void* values) {
  SURGE_CHECK(std::find(expected.begin(), expected.end(), kAnyExtent) == expected.end(),
              "reading '" + name + "' into a buffer needs its exact shape");
  const Handle dataset = open_dataset(parent, name, path, expected);
  read_whole(dataset.get(), memory_type, values, name);
}

void read_whole(hid_t dataset, hid_t memory_type, void* values, const std::string& name) {
  std::size_t count = 1;
  for (hsize_t d : dataset_dims(dataset)) count *= d;
  if (count > 0)
    check(H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values), "read dataset '" + name + "'");
}

namespace {
herr_t collect_name(hid_t, const char* name, const H5A_info_t*, void* names) {
  static_cast<std::vector<std::string>*>(names)->emplace_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> attribute_names(hid_t object) {
  std::vector<std::string> names;
  hsize_t position = 0;
  if (H5Aiterate2(object, H5_INDEX_CRT_ORDER, H5_ITER_INC, &position, collect_name, &names) < 0) {
    H5Eclear2(H5E_DEFAULT);  // creation order is not tracked in this file: fall back to names
    names.clear();
    position = 0;
    check(H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, &position, collect_name, &names), "list attributes");
  }
  return names;
}

std::string attribute_text(hid_t object, const std::string& name) {
  Handle attribute(H5Aopen(object, name.c_str(), H5P_DEFAULT), "open attribute '" + name + "'");
  Handle type(H5Aget_type(attribute.get()), "type of attribute '" + name + "'");
  Handle space(H5Aget_space(attribute.get()), "space of attribute '" + name + "'");
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  check(count, "size of attribute '" + name + "'");
  std::ostringstream text;
  switch (H5Tget_class(type.get())) {
    case H5T_STRING: {
      const std::vector<std::string> values = read_strings(attribute.get(), name);
      for (std::size_t k = 0; k < values.size(); ++k) text << (k ? ", " : "") << values[k];
      break;
    }
    case H5T_INTEGER: {
      std::vector<std::int64_t> values(static_cast<std::size_t>(count));
      check(H5Aread(attribute.get(), H5T_NATIVE_INT64, values.data()), "read attribute '" + name + "'");
      for (std::size_t k = 0; k < values.size(); ++k) text << (k ? ", " : "") << values[k];
      break;
    }
    case H5T_FLOAT: {
      std::vector<double> values(static_cast<std::size_t>(count));
      check(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, values.data()), "read attribute '" + name + "'");
      for (std::size_t k = 0; k < values.size(); ++k) text << (k ? ", " : "") << format_precise(values[k]);
      break;
    }
    default: text << "(a value of HDF5 type class " << static_cast<int>(H5Tget_class(type.get())) << ")";
  }
  return text.str();
}

}  // namespace surge::rl::hdf5

namespace surge::rl::hdf5 {

ElementType element_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return {H5T_NATIVE_FLOAT, H5T_IEEE_F32LE};
    case DType::Float64: return {H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE};
    case DType::Int32: return {H5T_NATIVE_INT32, H5T_STD_I32LE};
    case DType::Int64: return {H5T_NATIVE_INT64, H5T_STD_I64LE};
    case DType::UInt8: return {H5T_NATIVE_UINT8, H5T_STD_U8LE};
    case DType::UInt64: return {H5T_NATIVE_UINT64, H5T_STD_U64LE};
  }
  throw Error("no HDF5 type for this dtype");
}

void write_values(hid_t group, const std::string& name, const Values& values) {
  std::vector<hsize_t> dims(values.dims.begin(), values.dims.end());
  if (dims.empty()) dims.push_back(0);
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), "dataspace of " + name);
  Handle dataset(H5Dcreate2(group, name.c_str(), element_type(values.dtype).file, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                            H5P_DEFAULT),
                 "create " + name);
  if (!values.bytes.empty())
    check(
        H5Dwrite(dataset.get(), element_type(values.dtype).memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.bytes.data()),
        "write " + name);
}

Values read_values(hid_t group, const std::string& name, const std::string& file) {
  Handle dataset(H5Dopen2(group, name.c_str(), H5P_DEFAULT), "open " + name);
  Handle type(H5Dget_type(dataset.get()), "type of " + name);
  const H5T_class_t kind = H5Tget_class(type.get());
  const std::size_t size = H5Tget_size(type.get());
  Values values;
  if (kind == H5T_FLOAT && size == 4)
    values.dtype = DType::Float32;
  else if (kind == H5T_FLOAT && size == 8)
    values.dtype = DType::Float64;
  else if (kind == H5T_INTEGER && size == 1 && H5Tget_sign(type.get()) == H5T_SGN_NONE)
    values.dtype = DType::UInt8;
  else if (kind == H5T_INTEGER && size == 4 && H5Tget_sign(type.get()) == H5T_SGN_2)
    values.dtype = DType::Int32;
  else if (kind == H5T_INTEGER && size == 8 && H5Tget_sign(type.get()) == H5T_SGN_2)
    values.dtype = DType::Int64;
  else if (kind == H5T_INTEGER && size == 8 && H5Tget_sign(type.get()) == H5T_SGN_NONE)
    values.dtype = DType::UInt64;
  else
    throw InputError("'" + file + "': dataset " + name +
                     " holds a type Surge does not write; the file is damaged or not Surge's");
  for (hsize_t extent : dataset_dims(dataset.get())) values.dims.push_back(static_cast<std::int64_t>(extent));
  std::int64_t count = 1;
  for (std::int64_t extent : values.dims) count *= extent;
  values.bytes.resize(static_cast<std::size_t>(count) * dtype_size(values.dtype));
  if (count > 0)
    check(H5Dread(dataset.get(), element_type(values.dtype).memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.bytes.data()),
          "read " + name);
  return values;
}

}  // namespace surge::rl::hdf5
