#pragma once
// How checkpoint files (rl/io/checkpoint.hpp, rl/io/resume_state.hpp) are written and read so that
// damage is found: the files use HDF5's 1.10 format, whose metadata (superblock, object headers,
// chunk indexes) carries checksums, and every dataset is chunked with the Fletcher-32 filter, which
// HDF5 verifies on every read. Reading treats the file as hostile: each dataset and attribute is
// checked for presence, kind, element type, shape and stored size before anything is allocated for
// it, and any failure, HDF5's own included, becomes one InputError:
//   checkpoint 'PATH' is damaged: dataset '/parameters/actor.0.weight' fails its checksum; ...
// Only .cpp files in rl/io/ include this header.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "rl/io/hdf5_read_guard.hpp"
#include "rl/io/hdf5_util.hpp"
#include "sim/error.hpp"

namespace surge::rl::checkpoint_file {

// A new checkpoint file (truncating any at `path`), and an existing one opened to add to it; both in
// the checksummed format. Throw Error when the file cannot be created or opened.
hdf5::Handle create(const std::string& path);
hdf5::Handle open_for_append(const std::string& path);

// Dataset `name` under `parent`, shaped `dims`, holding `values` (row-major) as `dtype`: chunked with
// the Fletcher-32 checksum (a dataset of no values is written plain: there is nothing to check).
void write(hid_t parent, const std::string& name, DType dtype, const std::vector<hsize_t>& dims, const void* values);
template <class T>
void write(hid_t parent, const std::string& name, const std::vector<hsize_t>& dims, const T* values) {
  write(parent, name, dtype_of<T>, dims, values);
}

// Reads one checkpoint file; every name is a full path inside it ("/parameters/actor.0.weight",
// attributes of "/" or "/optimizer"). Every failure throws InputError naming the file.
class Reader {
 public:
  // Throws InputError when `path` is missing, not HDF5, or HDF5 cannot open it (truncated, damaged).
  explicit Reader(const std::string& path);

  const std::string& path() const { return path_; }
  hid_t file() const { return file_.get(); }
  // "checkpoint 'PATH' is damaged: <what>; <the way out>".
  [[noreturn]] void damaged(const std::string& what) const;

  bool has_object(const std::string& name) const;  // a group or dataset, reached by hard links only
  bool has_attribute(const std::string& object, const std::string& name) const;
  // Names of the links in group `group`, in name order.
  std::vector<std::string> members(const std::string& group) const;

  // A dataset's values as `dtype` (the stored type must be that type), shaped as one of `shapes`
  // (an extent of hdf5::kAnyExtent matches any): returns the shape found.
  std::vector<hsize_t> read(const std::string& name, DType dtype, const std::vector<std::vector<hsize_t>>& shapes,
                            std::vector<std::byte>& bytes) const;
  // A dataset of exactly `dims` (or one of `shapes`) into `values`, which has room for it.
  template <class T>
  void read_into(const std::string& name, const std::vector<std::vector<hsize_t>>& shapes, T* values) const {
    std::vector<std::byte> bytes;
    read(name, dtype_of<T>, shapes, bytes);
    std::memcpy(values, bytes.data(), bytes.size());
  }
  // A dataset of any of Surge's element types and any shape, as it was written.
  hdf5::Values read_values(const std::string& name) const;

  std::string text(const std::string& object, const std::string& name) const;
  std::vector<std::string> texts(const std::string& object, const std::string& name) const;
  // One integer in [low, high].
  std::int64_t integer(const std::string& object, const std::string& name, std::int64_t low, std::int64_t high) const;
  // Exactly `count` integers.
  std::vector<std::int64_t> integers(const std::string& object, const std::string& name, std::size_t count) const;
  // One finite number in [low, high].
  double number(const std::string& object, const std::string& name, double low, double high) const;

 private:
  hdf5::Handle open_object(const std::string& name) const;
  hdf5::Handle open_attribute(const std::string& object, const std::string& name, const std::string& expected,
                              H5T_class_t type_class, H5T_class_t other_class) const;

  std::string path_;
  hdf5::Handle file_;
};

// Runs `read` (which uses a Reader) and turns every failure that is not already an InputError (an
// HDF5 call that failed, a size too large to allocate) into "checkpoint 'PATH' is damaged: ...".
template <class Read>
auto guarded(const std::string& path, Read&& read) -> decltype(read());
[[noreturn]] void rethrow_as_damaged(const std::string& path);
// The line a crash inside HDF5 during such a read ends the program with (hdf5::CrashGuard).
std::string crash_line(const std::string& path);

template <class Read>
auto guarded(const std::string& path, Read&& read) -> decltype(read()) {
  const hdf5::CrashGuard crash_guard(crash_line(path));
  try {
    return read();
  } catch (const InputError&) {
    throw;
  } catch (...) {
    rethrow_as_damaged(path);
  }
}

}  // namespace surge::rl::checkpoint_file
