#pragma once
// Small helpers around HDF5's C API for the rollout log and its reader: an owning handle, the
// library's error stack turned into one line, and the lock every HDF5 call takes (Debian's and most
// other builds of the library are not thread-safe, and the log writes from its own thread).
// Only .cpp files in rl/ include this header; HDF5's types stay out of the public headers.
#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <string>
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

// The current dimensions of a dataset.
std::vector<hsize_t> dataset_dims(hid_t dataset);

// Attributes on an object (the file's root group or a dataset).
void write_string_attribute(hid_t object, const std::string& name, const std::string& value);
void write_strings_attribute(hid_t object, const std::string& name, const std::vector<std::string>& values);
void write_int_attribute(hid_t object, const std::string& name, std::int64_t value);
void write_ints_attribute(hid_t object, const std::string& name, const std::vector<std::int64_t>& values);
void write_floats_attribute(hid_t object, const std::string& name, const std::vector<float>& values);

bool has_attribute(hid_t object, const std::string& name);
std::string read_string_attribute(hid_t object, const std::string& name);
std::int64_t read_int_attribute(hid_t object, const std::string& name);
std::vector<std::string> read_strings_attribute(hid_t object, const std::string& name);

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
hid_t native_type(DType dtype);
hid_t file_type(DType dtype);  // little-endian, as every file Surge writes
// Creates `name` under `group` with the values' shape (one dimension of 0 for no values).
void write_values(hid_t group, const std::string& name, const Values& values);
// A whole dataset in the element type it was written with (an integer or IEEE type Surge writes);
// throws InputError naming `file` when the dataset holds another kind of type.
Values read_values(hid_t group, const std::string& name, const std::string& file);

}  // namespace surge::rl::hdf5
