#include "rl/io/checkpoint_file.hpp"

#include <cmath>
#include <filesystem>
#include <new>
#include <optional>

#include "sim/format.hpp"

namespace surge::rl::checkpoint_file {
namespace {

// A chunk of at most this many bytes: small enough that a damaged chunk is found without reading
// much, large enough that the chunk index stays small.
constexpr hsize_t kChunkBytes = hsize_t(1) << 20;

constexpr const char* kWayOut = "write it again with surge train, or use an undamaged copy";

hdf5::Handle file_access() {
  hdf5::Handle properties(H5Pcreate(H5P_FILE_ACCESS), "file access properties");
  hdf5::check(H5Pset_libver_bounds(properties.get(), H5F_LIBVER_V110, H5F_LIBVER_V110), "file format bounds");
  return properties;
}

// The chunk of a dataset shaped `dims`: whole trailing dimensions while they fit in kChunkBytes,
// then as many of the next dimension's entries as fit, and 1 of every leading one.
std::vector<hsize_t> chunk_shape(const std::vector<hsize_t>& dims, std::size_t element_bytes) {
  std::vector<hsize_t> chunk(dims.size(), 1);
  hsize_t bytes = element_bytes;
  for (std::size_t k = dims.size(); k-- > 0;) {
    if (bytes * dims[k] <= kChunkBytes) {
      chunk[k] = dims[k];
      bytes *= dims[k];
      continue;
    }
    chunk[k] = std::max<hsize_t>(1, kChunkBytes / bytes);
    break;
  }
  return chunk;
}

// Surge's element type whose file type matches `type` in kind, size and sign, if any.
std::optional<DType> stored_dtype(hid_t type) {
  const H5T_class_t kind = H5Tget_class(type);
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::UInt8, DType::UInt64}) {
    const hid_t file_type = hdf5::element_type(dtype).file;
    if (H5Tget_class(file_type) != kind || H5Tget_size(file_type) != H5Tget_size(type)) continue;
    if (kind == H5T_INTEGER && H5Tget_sign(file_type) != H5Tget_sign(type)) continue;
    return dtype;
  }
  return std::nullopt;
}

bool shape_matches(const std::vector<hsize_t>& dims, const std::vector<hsize_t>& expected) {
  if (dims.size() != expected.size()) return false;
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (expected[k] != hdf5::kAnyExtent && expected[k] != dims[k]) return false;
  return true;
}

std::string attribute_where(const std::string& object, const std::string& name) {
  return "attribute '" + name + "' of " + object;
}

}  // namespace

hdf5::Handle create(const std::string& path) {
  const hdf5::Handle access = file_access();
  return hdf5::Handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), "create " + path);
}

hdf5::Handle open_for_append(const std::string& path) {
  const hdf5::Handle access = file_access();
  return hdf5::Handle(H5Fopen(path.c_str(), H5F_ACC_RDWR, access.get()), "open " + path);
}

void write(hid_t parent, const std::string& name, DType dtype, const std::vector<hsize_t>& dims, const void* values) {
  hsize_t count = 1;
  for (hsize_t d : dims) count *= d;
  const hdf5::ElementType type = hdf5::element_type(dtype);
  if (count == 0 || dims.empty()) {
    hdf5::write_dataset(parent, name, type, dims, values);
    return;
  }
  hdf5::Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), "dataspace of " + name);
  hdf5::Handle properties(H5Pcreate(H5P_DATASET_CREATE), "dataset properties");
  const std::vector<hsize_t> chunk = chunk_shape(dims, dtype_size(dtype));
  hdf5::check(H5Pset_chunk(properties.get(), static_cast<int>(chunk.size()), chunk.data()), "chunk shape of " + name);
  hdf5::check(H5Pset_fletcher32(properties.get()), "checksum filter of " + name);
  hdf5::Handle dataset(
      H5Dcreate2(parent, name.c_str(), type.file, space.get(), H5P_DEFAULT, properties.get(), H5P_DEFAULT),
      "create dataset '" + name + "'");
  hdf5::check(H5Dwrite(dataset.get(), type.memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, values),
              "write dataset '" + name + "'");
}

// ---- reading

Reader::Reader(const std::string& path) : path_(path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    throw InputError("checkpoint '" + path + "' does not exist" +
                     (std::filesystem::exists(path, error) ? " as a file" : "") +
                     "; `surge train --out DIR` writes DIR/checkpoint.h5");
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw InputError("'" + path + "' is not an HDF5 file, so not a Surge checkpoint");
  }
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) damaged("HDF5 cannot open it (" + hdf5::error_stack() + ")");
  file_ = hdf5::Handle(file, "open " + path);
}

void Reader::damaged(const std::string& what) const {
  throw InputError("checkpoint '" + path_ + "' is damaged: " + what + "; " + kWayOut);
}

bool Reader::has_object(const std::string& name) const {
  if (name == "/") return true;
  // Each step of the path must be a hard link: a soft or external link could lead anywhere.
  std::string prefix;
  std::size_t start = 1;
  while (start <= name.size()) {
    const std::size_t end = std::min(name.find('/', start), name.size());
    prefix = name.substr(0, end);
    if (H5Lexists(file(), prefix.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    H5L_info_t info;
    if (H5Lget_info(file(), prefix.c_str(), &info, H5P_DEFAULT) < 0 || info.type != H5L_TYPE_HARD)
      damaged("'" + prefix + "' is a link to somewhere else, not a group or dataset of the file");
    start = end + 1;
  }
  return true;
}

hdf5::Handle Reader::open_object(const std::string& name) const {
  if (!has_object(name)) damaged("'" + name + "' is missing");
  const hid_t object = H5Oopen(file(), name.c_str(), H5P_DEFAULT);
  if (object < 0) damaged("'" + name + "' cannot be opened (" + hdf5::error_stack() + ")");
  return hdf5::Handle(object, "open " + name);
}

bool Reader::has_attribute(const std::string& object, const std::string& name) const {
  const hdf5::Handle handle = open_object(object);
  const htri_t exists = H5Aexists(handle.get(), name.c_str());
  H5Eclear2(H5E_DEFAULT);
  return exists > 0;
}

std::vector<std::string> Reader::members(const std::string& group) const {
  const hdf5::Handle handle = open_object(group);
  if (H5Iget_type(handle.get()) != H5I_GROUP) damaged("'" + group + "' is not a group");
  H5G_info_t info;
  hdf5::check(H5Gget_info(handle.get(), &info), "list " + group);
  std::vector<std::string> names;
  for (hsize_t k = 0; k < info.nlinks; ++k) {
    const ssize_t length =
        H5Lget_name_by_idx(handle.get(), ".", H5_INDEX_NAME, H5_ITER_INC, k, nullptr, 0, H5P_DEFAULT);
    hdf5::check(length, "name of an entry of " + group);
    std::string name(static_cast<std::size_t>(length), '\0');
    hdf5::check(
        H5Lget_name_by_idx(handle.get(), ".", H5_INDEX_NAME, H5_ITER_INC, k, name.data(), name.size() + 1, H5P_DEFAULT),
        "name of an entry of " + group);
    names.push_back(std::move(name));
  }
  return names;
}

std::vector<hsize_t> Reader::read(const std::string& name, DType dtype, const std::vector<std::vector<hsize_t>>& shapes,
                                  std::vector<std::byte>& bytes) const {
  const hdf5::Handle dataset = open_object(name);
  const std::string where = "dataset '" + name + "'";
  if (H5Iget_type(dataset.get()) != H5I_DATASET) damaged(where + " is not a dataset");
  const hdf5::Handle type(H5Dget_type(dataset.get()), "type of " + name);
  const std::optional<DType> stored = stored_dtype(type.get());
  if (stored != dtype)
    damaged(where + " holds " + (stored ? dtype_name(*stored) : std::string("values of another kind")) + " where " +
            dtype_name(dtype) + " is expected");
  const hdf5::Handle space(H5Dget_space(dataset.get()), "dataspace of " + name);
  if (H5Sget_simple_extent_type(space.get()) != H5S_SIMPLE) damaged(where + " is not an array of values");
  // Its values must lie in this file: not in external files, nor in other files' datasets (virtual).
  const hdf5::Handle creation(H5Dget_create_plist(dataset.get()), "properties of " + name);
  const H5D_layout_t layout = H5Pget_layout(creation.get());
  if ((layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED && layout != H5D_COMPACT) ||
      H5Pget_external_count(creation.get()) != 0)
    damaged(where + " keeps its values outside the file");
  const std::vector<hsize_t> dims = hdf5::dataset_dims(dataset.get());
  bool matches = shapes.empty();  // none given: any shape
  for (const std::vector<hsize_t>& shape : shapes) matches = matches || shape_matches(dims, shape);
  if (!matches) {
    std::string expected;
    for (const std::vector<hsize_t>& shape : shapes)
      expected += (expected.empty() ? "" : " or ") + hdf5::shape_text(shape);
    damaged(where + " is shaped " + hdf5::shape_text(dims) + " where " + expected + " is expected");
  }
  // Its size in bytes, which the file must hold: a shape alone costs nothing to forge.
  std::uint64_t size = dtype_size(dtype);
  for (hsize_t d : dims)
    if (__builtin_mul_overflow(size, static_cast<std::uint64_t>(d), &size)) damaged(where + " is impossibly large");
  std::error_code error;
  const std::uintmax_t file_size = std::filesystem::file_size(path_, error);
  if (size > 0 && (H5Dget_storage_size(dataset.get()) < size || (!error && size > file_size)))
    damaged(where + " is shaped " + hdf5::shape_text(dims) + " but the file does not hold its " + std::to_string(size) +
            " bytes");
  bytes.assign(static_cast<std::size_t>(size), std::byte{0});
  if (size > 0 &&
      H5Dread(dataset.get(), hdf5::element_type(dtype).memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) < 0) {
    const std::string stack = hdf5::error_stack();
    if (stack.find("Fletcher32") != std::string::npos || stack.find("checksum") != std::string::npos)
      damaged(where + " fails its checksum");
    damaged(where + " cannot be read (" + stack + ")");
  }
  return dims;
}

hdf5::Values Reader::read_values(const std::string& name) const {
  std::optional<DType> stored;
  {
    const hdf5::Handle dataset = open_object(name);
    if (H5Iget_type(dataset.get()) != H5I_DATASET) damaged("dataset '" + name + "' is not a dataset");
    const hdf5::Handle type(H5Dget_type(dataset.get()), "type of " + name);
    stored = stored_dtype(type.get());
  }
  if (!stored) damaged("dataset '" + name + "' holds values of a type Surge does not write");
  hdf5::Values values;
  values.dtype = *stored;
  for (hsize_t d : read(name, *stored, {}, values.bytes)) values.dims.push_back(static_cast<std::int64_t>(d));
  return values;
}

hdf5::Handle Reader::open_attribute(const std::string& object, const std::string& name, const std::string& expected,
                                    H5T_class_t type_class, H5T_class_t other_class) const {
  const std::string where = attribute_where(object, name);
  if (!has_attribute(object, name)) damaged(where + " is missing");
  const hdf5::Handle handle = open_object(object);
  const hid_t attribute = H5Aopen(handle.get(), name.c_str(), H5P_DEFAULT);
  if (attribute < 0) damaged(where + " cannot be opened (" + hdf5::error_stack() + ")");
  hdf5::Handle result(attribute, "open " + where);
  const hdf5::Handle type(H5Aget_type(attribute), "type of " + where);
  const H5T_class_t found = H5Tget_class(type.get());
  if (found != type_class && found != other_class) damaged(where + " is not " + expected);
  return result;
}

std::string Reader::text(const std::string& object, const std::string& name) const {
  const std::vector<std::string> values = texts(object, name);
  if (values.size() != 1)
    damaged(attribute_where(object, name) + " holds " + std::to_string(values.size()) + " texts where one is expected");
  return values.front();
}

std::vector<std::string> Reader::texts(const std::string& object, const std::string& name) const {
  open_attribute(object, name, "text", H5T_STRING, H5T_STRING);
  const hdf5::Handle handle = open_object(object);
  return hdf5::read_strings_attribute(handle.get(), name);
}

std::vector<std::int64_t> Reader::integers(const std::string& object, const std::string& name,
                                           std::size_t count) const {
  const std::string where = attribute_where(object, name);
  const hdf5::Handle attribute =
      open_attribute(object, name, count == 1 ? "an integer" : "integers", H5T_INTEGER, H5T_INTEGER);
  const hdf5::Handle space(H5Aget_space(attribute.get()), "space of " + where);
  const hssize_t found = H5Sget_simple_extent_npoints(space.get());
  if (found < 0 || static_cast<std::size_t>(found) != count)
    damaged(where + " holds " + std::to_string(found) + " integers where " + std::to_string(count) + " are expected");
  std::vector<std::int64_t> values(count);
  hdf5::check(H5Aread(attribute.get(), H5T_NATIVE_INT64, values.data()), "read " + where);
  return values;
}

std::int64_t Reader::integer(const std::string& object, const std::string& name, std::int64_t low,
                             std::int64_t high) const {
  const std::int64_t value = integers(object, name, 1).front();
  if (value < low || value > high)
    damaged(attribute_where(object, name) + " is " + std::to_string(value) + " where " + std::to_string(low) + ".." +
            std::to_string(high) + " is expected");
  return value;
}

double Reader::number(const std::string& object, const std::string& name, double low, double high) const {
  const std::string where = attribute_where(object, name);
  const hdf5::Handle attribute = open_attribute(object, name, "a number", H5T_FLOAT, H5T_INTEGER);
  const hdf5::Handle space(H5Aget_space(attribute.get()), "space of " + where);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) damaged(where + " is not one number");
  double value = 0.0;
  hdf5::check(H5Aread(attribute.get(), H5T_NATIVE_DOUBLE, &value), "read " + where);
  if (!(value >= low && value <= high))
    damaged(where + " is " + format_precise(value) + " where a number in [" + format_precise(low) + ", " +
            format_precise(high) + "] is expected");
  return value;
}

std::string crash_line(const std::string& path) {
  return "checkpoint '" + path + "' is damaged: the HDF5 library crashed reading it; " + kWayOut;
}

void rethrow_as_damaged(const std::string& path) {
  std::string what;
  try {
    throw;
  } catch (const std::bad_alloc&) {
    what = "a size in it is too large to hold in memory";
  } catch (const std::length_error&) {
    what = "a size in it is too large to hold in memory";
  } catch (const std::exception& e) {
    what = e.what();
  }
  throw InputError("checkpoint '" + path + "' is damaged: " + what + "; " + kWayOut);
}

}  // namespace surge::rl::checkpoint_file
