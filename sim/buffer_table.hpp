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
//
// An arena of K replicas holds K copies of the table's layout at a fixed distance in one allocation (one
// per agent of a batched learner): replica k's copy of an entry is replica 0's plus k * replica_stride_bytes().
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
  // Every non-empty entry into `plan` (name, shape, size). With replicas > 1, as a BufferArena of that many
  // replicas holds it: each entry once for all replicas, its shape prefixed "[K]", its size K times.
  void add_to(MemoryPlan& plan, int replicas = 1) const;

 private:
  int append(BufferEntry entry);
  std::vector<BufferEntry> entries_;
  std::size_t bytes_ = 0;
};

// One allocation on one device, carved by a table, zeroed when made. Owners move.
class BufferArena {
 public:
  BufferArena() = default;
  BufferArena(Device device, BufferTable table, const Stream& stream)
      : BufferArena(device, std::move(table), stream, 1) {}
  // K = `replicas` copies of `table`'s layout in one allocation, all zeroed: replica k's entry at replica 0's
  // address plus k * replica_stride_bytes() (the table's bytes, a multiple of 256, so every entry keeps its
  // alignment).
  BufferArena(Device device, BufferTable table, const Stream& stream, int replicas);

  // A slot the table never filled (a buffer this configuration does not have) gives an empty span.
  template <class T>
  Span<T> operator[](Slot<T> slot) const {
    return at(slot, 0);
  }
  template <class T>
  T* data(Slot<T> slot) const {
    return at(slot, 0).data;
  }
  // Replica `replica`'s entry.
  template <class T>
  Span<T> at(Slot<T> slot, int replica) const {
    if (slot.index < 0) return {nullptr, 0, device()};
    const BufferEntry& entry = typed_entry(slot.index, sizeof(T));
    const std::int64_t count = entry.elements();
    return {count > 0 ? reinterpret_cast<T*>(replica_base(replica) + entry.offset) : nullptr, count, device()};
  }
  template <class T>
  T* data(Slot<T> slot, int replica) const {
    return at(slot, replica).data;
  }
  // replica_stride_bytes() in elements of T: what a batched launcher takes as the distance between agents'
  // copies of the entry (PerAgent<T>::stride). Throws when T's size does not divide it.
  template <class T>
  std::int64_t replica_stride(Slot<T> slot) const {
    if (slot.index >= 0) typed_entry(slot.index, sizeof(T));
    SURGE_CHECK(replica_stride_ % sizeof(T) == 0, "the replica stride of " + std::to_string(replica_stride_) +
                                                      " bytes is not a multiple of " + std::to_string(sizeof(T)));
    return static_cast<std::int64_t>(replica_stride_ / sizeof(T));
  }

  const BufferTable& table() const { return table_; }
  Device device() const { return storage_.device(); }
  std::size_t device_bytes() const { return storage_.bytes(); }
  int replicas() const { return replicas_; }
  std::size_t replica_stride_bytes() const { return replica_stride_; }
  // The bytes of entry `index` of one replica, as they are on the device (an empty span for an empty buffer).
  Span<std::byte> bytes_of(int index, int replica = 0) const;
  // A shaped view (BufferEntry::value_dims) of every entry with at least one element of replica 0, named as
  // the entry; `prefix` is cut from the front of the names ("rollout." -> "obs").
  std::vector<NamedTensorView> tensor_views(const std::string& prefix = "") const;

 private:
  const BufferEntry& typed_entry(int index, std::size_t element_bytes) const {
    const BufferEntry& entry = table_[index];
    SURGE_CHECK(entry.element_bytes == element_bytes, "buffer '" + entry.name + "' read as a type of another size");
    return entry;
  }
  std::byte* replica_base(int replica) const {
    SURGE_CHECK(replica >= 0 && replica < replicas_,
                "replica " + std::to_string(replica) + " of an arena of " + std::to_string(replicas_));
    return storage_.data() + static_cast<std::size_t>(replica) * replica_stride_;
  }

  BufferTable table_;
  int replicas_ = 1;
  std::size_t replica_stride_ = 0;
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
// Rows [first, first + count) of every saved entry, each `total` rows along its first dimension: one agent's
// environments of an engine of several agents. Without them, whole entries.
struct SavedRows {
  std::int64_t first = 0, count = 0, total = 0;
};
// Copies every kSaved entry of one replica of `arena` that holds anything to the host (waits for `stream`):
// with `rows`, only those rows, saved with `count` as the first extent.
std::vector<SavedBuffer> save_buffers(const BufferArena& arena, const Stream& stream, int replica = 0,
                                      const SavedRows* rows = nullptr);
// Puts saved buffers back by name into one replica (with `rows`, into those rows alone); throws InputError
// naming `what` when a non-empty entry is missing, or its dtype or size differs from this run's, before
// anything is written. The other replicas and rows stay as they are.
void restore_buffers(const BufferArena& arena, const std::vector<SavedBuffer>& saved, const std::string& what,
                     const Stream& stream, int replica = 0, const SavedRows* rows = nullptr);

}  // namespace surge
