#pragma once
// One table per owner of device memory. An owner (VecEnv, RolloutStorage, Trainer, Normalization, the
// PPO workspace) declares each of its buffers once, as one line: name, element type, shape, meaning and
// whether a checkpoint saves it. The table alone then drives the single 256-byte-aligned allocation the
// buffers are carved from, device_bytes(), the `--dry-run` memory plan, tensor/DLPack views and the
// state a resumable checkpoint saves.
//
//   struct Buffers {                      // the owner's handles, filled by its table
//     Slot<float> obs;
//     Slot<TrainState> state;
//   };
//   BufferTable table;
//   b.obs = table.add<float>("rollout.obs", {t + 1, n, d}, "[T+1][N][obs_dim]", "observations");
//   b.state = table.add<TrainState>("learner.train_state", {1}, "[1]", "iteration counters", kSaved);
//   BufferArena arena(device, std::move(table));   // one allocation, zeroed
//   Span<float> obs = arena[b.obs];
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "sim/memory.hpp"
#include "sim/memory_plan.hpp"
#include "sim/tensor_view.hpp"

namespace surge {

// A typed handle to one entry of a BufferTable.
template <class T>
struct Slot {
  int index = -1;
};

// What else a buffer is, besides memory.
enum BufferFlags : std::uint32_t {
  kScratch = 0,
  kSaved = 1u << 0,  // part of the state a resumable checkpoint saves and restores
  kAgent = 1u << 1,  // part of the trained agent, which a checkpoint keeps in a layout of its own
};

struct BufferEntry {
  std::string name;                // "rollout.obs"
  std::string shape;               // "[T+1][N][obs_dim]", as a memory plan prints it
  std::vector<std::int64_t> dims;  // {T+1, N, obs_dim}; their product is the element count
  std::size_t element_bytes = 0;
  // The type of an element, or of each field of a struct element whose fields are all of one type
  // (TrainState: int64; a scenario's State: float32).
  DType dtype = DType::Float32;
  std::string meaning;  // one line
  std::uint32_t flags = kScratch;
  std::size_t offset = 0;  // bytes from the start of the allocation, a multiple of 256

  std::int64_t elements() const;
  std::size_t bytes() const { return static_cast<std::size_t>(elements()) * element_bytes; }
  // Values of `dtype` per element: 1, or a struct's field count.
  std::int64_t components() const { return static_cast<std::int64_t>(element_bytes / dtype_size(dtype)); }
  // dims, with the struct's fields as a last dimension where an element has more than one.
  std::vector<std::int64_t> value_dims() const;
  bool saved() const { return (flags & kSaved) != 0; }
  // The name a checkpoint keeps a saved entry under: the entry's less its owner ("metrics.running_return"
  // -> "running_return").
  std::string saved_name() const { return name.substr(name.find('.') + 1); }
  bool agent() const { return (flags & kAgent) != 0; }
};

class BufferTable {
 public:
  // Appends an entry and returns its handle. Names must be unique; a zero extent makes an empty buffer
  // (a part the configuration switches off), which takes no memory and whose span has no data.
  template <class T>
  Slot<T> add(std::string name, std::initializer_list<std::int64_t> dims, std::string shape, std::string meaning,
              std::uint32_t flags = kScratch) {
    return add<T>(dtype_of<T>, std::move(name), dims, std::move(shape), std::move(meaning), flags);
  }
  // A buffer of structs whose fields are all of type `fields` (TrainState: DType::Int64).
  template <class T>
  Slot<T> add(DType fields, std::string name, std::initializer_list<std::int64_t> dims, std::string shape,
              std::string meaning, std::uint32_t flags = kScratch) {
    static_assert(std::is_trivially_copyable_v<T>, "device buffers hold trivially copyable types");
    return {append({std::move(name), std::move(shape), std::vector<std::int64_t>(dims), sizeof(T), fields,
                    std::move(meaning), flags, 0})};
  }

  const std::vector<BufferEntry>& entries() const { return entries_; }
  const BufferEntry& operator[](int index) const { return entries_.at(static_cast<std::size_t>(index)); }
  int find(const std::string& name) const;  // -1 if absent
  // Bytes of the one allocation: every entry rounded up to 256 bytes, as device_alloc would round it.
  std::size_t bytes() const { return bytes_; }
  // Every non-empty entry into `plan` (name, shape, size).
  void add_to(MemoryPlan& plan) const;

 private:
  int append(BufferEntry entry);
  std::vector<BufferEntry> entries_;
  std::size_t bytes_ = 0;
};

// One allocation on one device, carved by a table, zeroed when made. Owners move.
class BufferArena {
 public:
  BufferArena() = default;
  BufferArena(Device device, BufferTable table, const Stream& stream);

  // A slot the table never filled (a buffer this configuration does not have) gives an empty span.
  template <class T>
  Span<T> operator[](Slot<T> slot) const {
    if (slot.index < 0) return {nullptr, 0, device()};
    const BufferEntry& entry = table_[slot.index];
    SURGE_CHECK(entry.element_bytes == sizeof(T), "buffer '" + entry.name + "' read as a type of another size");
    const std::int64_t count = entry.elements();
    return {count > 0 ? reinterpret_cast<T*>(storage_.data() + entry.offset) : nullptr, count, device()};
  }
  template <class T>
  T* data(Slot<T> slot) const {
    return (*this)[slot].data;
  }

  const BufferTable& table() const { return table_; }
  Device device() const { return storage_.device(); }
  std::size_t device_bytes() const { return storage_.bytes(); }
  // The bytes of entry `index`, as they are on the device (an empty span for an empty buffer).
  Span<std::byte> bytes_of(int index) const;
  // A shaped view (BufferEntry::value_dims) of every entry with at least one element, named as the
  // entry; `prefix` is cut from the front of the names ("rollout." -> "obs").
  std::vector<NamedTensorView> tensor_views(const std::string& prefix = "") const;

 private:
  BufferTable table_;
  DeviceBuffer<std::byte> storage_;
};

// Host copies of the entries marked kSaved, by name: what a resumable checkpoint keeps of an owner.
struct SavedBuffer {
  std::string name;                // BufferEntry::saved_name
  DType dtype = DType::Float32;    // of each value
  std::vector<std::int64_t> dims;  // BufferEntry::value_dims
  bool agent = false;              // kAgent
  std::vector<std::byte> bytes;
};
// The saved buffer called `name`, or null.
const SavedBuffer* find_saved(const std::vector<SavedBuffer>& saved, const std::string& name);
// The saved buffer called `name` as one T (a struct such as TrainState), when it holds exactly one.
template <class T>
std::optional<T> saved_value(const std::vector<SavedBuffer>& saved, const std::string& name) {
  static_assert(std::is_trivially_copyable_v<T>);
  const SavedBuffer* buffer = find_saved(saved, name);
  if (!buffer || buffer->bytes.size() != sizeof(T)) return std::nullopt;
  T value;
  std::memcpy(&value, buffer->bytes.data(), sizeof value);
  return value;
}
// Copies every kSaved entry of `arena` that holds anything to the host (waits for `stream`).
std::vector<SavedBuffer> save_buffers(const BufferArena& arena, const Stream& stream);
// Puts saved buffers back by name; throws InputError naming `what` when a non-empty entry is missing, or
// its dtype or size differs from this run's.
void restore_buffers(const BufferArena& arena, const std::vector<SavedBuffer>& saved, const std::string& what,
                     const Stream& stream);

}  // namespace surge
