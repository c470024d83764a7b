#pragma once
// The one set of helpers around HDF5's C API for every file format in rl/io/ (checkpoints, resume
// state, the rollout log and its reader): an owning handle, the library's error stack turned into one
// line, the lock every HDF5 call takes (Debian's and most other builds of the library are not
// thread-safe, and the log writes from its own thread), the mapping from C++ element types to HDF5
// types, and whole-dataset, row-by-row and attribute reads and writes.
// Only .cpp files in rl/io/ include this header; HDF5's types stay out of the public headers.
#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "sim/tensor_view.hpp"

namespace surge::rl::hdf5 {

// Serialises all HDF5 calls in the process.
std::mutex& library_mutex();

// Silences HDF5's own printing of its error stack on the calling thread (we report it ourselves,
// in one line; thread-safe builds of HDF5 keep this setting per thread).
void quiet_errors();

// Held around every use of HDF5: takes library_mutex() and silences the error printing.
class Lock {
 public:
  Lock() : lock_(library_mutex()) { quiet_errors(); }

 private:
  std::lock_guard<std::mutex> lock_;
};

// The innermost entries of HDF5's current error stack in one line, e.g.
// "H5FD_sec2_write: file write failed: ... errno = 28, error message = 'No space left on device'".
std::string error_stack();

// Throws surge::Error("<what>: <error_stack()>") when status < 0 (HDF5 returns negative on failure).
void check(std::int64_t status, const std::string& what);

// Owns one HDF5 identifier (file, dataset, dataspace, property list, attribute or type) and closes it
// with H5Oclose-like dispatch on its kind. Owners move.
class Handle {
 public:
  Handle() = default;
  // Takes ownership of `id`; throws surge::Error naming `what` if id is negative.
  Handle(hid_t id, const std::string& what);
  ~Handle() { close(); }
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      close();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }
  // Closes now; returns HDF5's status (negative on failure, with the reason on its error stack).
  herr_t close() noexcept;
  void reset() noexcept { close(); }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// ---- element types ------------------------------------------------------------------------------

// How values of one element type are held: the native type in memory, and the little-endian type
// stored in files, so that a file reads the same on every machine.
struct ElementType {
  hid_t memory;
  hid_t file;
};

ElementType element_type(DType dtype);
template <class T>
ElementType element_type() {
  return element_type(dtype_of<T>);
}

// ---- datasets -----------------------------------------------------------------------------------

// The current dimensions of a dataset.
std::vector<hsize_t> dataset_dims(hid_t dataset);

// "[4][6][3]"; kAnyExtent shows as "[*]".
inline constexpr hsize_t kAnyExtent = ~hsize_t(0);
std::string shape_text(const std::vector<hsize_t>& dims);

// Creates dataset `name` under `parent`, shaped `dims`, and writes `values` (row-major, as many as
// `dims` hold; nothing is written when that is none). Returns it, for attributes.
Handle write_dataset(hid_t parent, const std::string& name, ElementType type, const std::vector<hsize_t>& dims,
                     const void* values);
template <class T>
Handle write_dataset(hid_t parent, const std::string& name, const std::vector<hsize_t>& dims, const T* values) {
  return write_dataset(parent, name, element_type<T>(), dims, values);
}
// A one-dimensional dataset holding `values`.
template <class T>
Handle write_dataset(hid_t parent, const std::string& name, const std::vector<T>& values) {
  return write_dataset(parent, name, element_type<T>(), {values.size()}, values.data());
}

// An extendable dataset [0](row) whose first axis grows as rows are appended: chunked as `chunk`
// (its rank is one more than row's), with the shuffle filter, deflate at `deflate_level` (0: none)
// and the creation order of its attributes tracked.
Handle create_extendable_dataset(hid_t parent, const std::string& name, hid_t file_type,
                                 const std::vector<hsize_t>& row, const std::vector<hsize_t>& chunk, int deflate_level);
// Writes `values` (one row) at `row_index` of an extendable dataset, growing it to row_index + 1 rows.
void write_row(hid_t dataset, std::int64_t row_index, hid_t memory_type, const void* values, const std::string& name);

// Opens dataset `name` under `parent` of the file at `path`, checking its shape against `expected`
// (an extent of kAnyExtent matches any). Throws InputError, naming the file and the dataset, when it
// is missing, and also the shape found and the shape expected when that differs.
Handle open_dataset(hid_t parent, const std::string& name, const std::string& path,
                    const std::vector<hsize_t>& expected);
// Reads an open dataset whole into `values`, which has room for all of it.
void read_whole(hid_t dataset, hid_t memory_type, void* values, const std::string& name);

// A whole dataset of the shape expected, row-major.
template <class T>
std::vector<T> read_dataset(hid_t parent, const std::string& name, const std::string& path,
                            const std::vector<hsize_t>& expected) {
  const Handle dataset = open_dataset(parent, name, path, expected);
  std::size_t count = 1;
  for (hsize_t d : dataset_dims(dataset.get())) count *= d;
  std::vector<T> values(count);
  read_whole(dataset.get(), element_type<T>().memory, values.data(), name);
  return values;
}
// A whole one-dimensional dataset, of any length.
template <class T>
std::vector<T> read_dataset(hid_t parent, const std::string& name, const std::string& path) {
  return read_dataset<T>(parent, name, path, {kAnyExtent});
}
// A whole dataset of exactly the shape expected (no kAnyExtent: `values` has room for that shape).
void read_dataset_into(hid_t parent, const std::string& name, const std::string& path,
                       const std::vector<hsize_t>& expected, hid_t memory_type, void* values);
template <class T>
void read_dataset_into(hid_t parent, const std::string& name, const std::string& path,
                       const std::vector<hsize_t>& expected, T* values) {
  read_dataset_into(parent, name, path, expected, element_type<T>().memory, values);
}

// Attributes on an object (the file's root group or a dataset).
void write_string_attribute(hid_t object, const std::string& name, const std::string& value);
void write_strings_attribute(hid_t object, const std::string& name, const std::vector<std::string>& values);
void write_int_attribute(hid_t object, const std::string& name, std::int64_t value);
void write_double_attribute(hid_t object, const std::string& name, double value);
void write_ints_attribute(hid_t object, const std::string& name, const std::vector<std::int64_t>& values);
void write_floats_attribute(hid_t object, const std::string& name, const std::vector<float>& values);

bool has_attribute(hid_t object, const std::string& name);
std::string read_string_attribute(hid_t object, const std::string& name);
std::int64_t read_int_attribute(hid_t object, const std::string& name);
double read_double_attribute(hid_t object, const std::string& name);
std::vector<std::string> read_strings_attribute(hid_t object, const std::string& name);
// Exactly `count` integers, as int64; throws InputError naming the file at `path`, the attribute and
// what it holds instead (a damaged or hand-made file).
std::vector<std::int64_t> read_ints_attribute(hid_t object, const std::string& name, const std::string& path,
                                              std::size_t count);

// Names of an object's attributes, in creation order where the file tracks it, else by name.
std::vector<std::string> attribute_names(hid_t object);
// An attribute's value as text: strings as they are, numbers (scalar or array) as "a, b, c".
std::string attribute_text(hid_t object, const std::string& name);

}  // namespace surge::rl::hdf5

namespace surge::rl::hdf5 {

// Datasets of any of Surge's element types, as raw bytes with a dtype and a shape: what the buffer
// tables' saved entries (sim/buffer_table.hpp) become in a file.
struct Values {
  DType dtype = DType::Float32;
  std::vector<std::int64_t> dims;
  std::vector<std::byte> bytes;  // dims' product of dtype values, native byte order
};
// Creates `name` under `group` with the values' shape (one dimension of 0 for no values).
void write_values(hid_t group, const std::string& name, const Values& values);
// A whole dataset in the element type it was written with (an integer or IEEE type Surge writes);
// throws InputError naming `file` when the dataset holds another kind of type.
Values read_values(hid_t group, const std::string& name, const std::string& file);

}  // namespace surge::rl::hdf5
