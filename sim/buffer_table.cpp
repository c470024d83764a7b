#include "sim/buffer_table.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "sim/error.hpp"

namespace surge {

std::int64_t BufferEntry::elements() const {
  std::int64_t count = 1;
  for (std::int64_t extent : dims) count *= extent;
  return count;
}

std::vector<std::int64_t> BufferEntry::value_dims() const {
  std::vector<std::int64_t> values = dims;
  if (components() > 1) values.push_back(components());
  return values;
}

int BufferTable::append(BufferEntry entry) {
  SURGE_CHECK(find(entry.name) < 0, "buffer '" + entry.name + "' is in the table twice");
  SURGE_CHECK(entry.element_bytes % dtype_size(entry.dtype) == 0,
              "buffer '" + entry.name + "': its elements are not made of " + dtype_name(entry.dtype) + " fields");
  for (std::int64_t extent : entry.dims) SURGE_CHECK(extent >= 0, "buffer '" + entry.name + "' has a negative extent");
  entry.offset = bytes_;
  bytes_ += allocation_bytes(entry.bytes());
  entries_.push_back(std::move(entry));
  return static_cast<int>(entries_.size()) - 1;
}

int BufferTable::find(const std::string& name) const {
  for (std::size_t k = 0; k < entries_.size(); ++k)
    if (entries_[k].name == name) return static_cast<int>(k);
  return -1;
}

void BufferTable::add_to(MemoryPlan& plan, int replicas) const {
  SURGE_CHECK(replicas >= 1, "an arena of " + std::to_string(replicas) + " replicas");
  for (const BufferEntry& entry : entries_)
    plan.add(entry.name, replicas == 1 ? entry.shape : "[K]" + entry.shape, replicas * entry.elements(),
             entry.element_bytes, replicas);
}

BufferArena::BufferArena(Device device, BufferTable table, const Stream& stream, int replicas)
    : table_(std::move(table)),
      replicas_(replicas),
      replica_stride_(table_.bytes()),
      storage_(device, static_cast<std::int64_t>(table_.bytes()) * std::max(replicas, 1)) {
  SURGE_CHECK(replicas >= 1, "an arena of " + std::to_string(replicas) + " replicas");
  SURGE_CHECK(replica_stride_ % 256 == 0, "a table's bytes are whole 256-byte granules");
  // Zeroed, every replica, so that no buffer starts with whatever the allocator left (counters and
  // accumulators rely on it).
  if (storage_.bytes() > 0) zero_bytes(storage_.data(), device, storage_.bytes(), stream);
}

Span<std::byte> BufferArena::bytes_of(int index, int replica) const {
  const BufferEntry& entry = table_[index];
  const std::int64_t count = static_cast<std::int64_t>(entry.bytes());
  return {count > 0 ? replica_base(replica) + entry.offset : nullptr, count, device()};
}

std::vector<NamedTensorView> BufferArena::tensor_views(const std::string& prefix) const {
  std::vector<NamedTensorView> views;
  for (std::size_t k = 0; k < table_.entries().size(); ++k) {
    const BufferEntry& entry = table_.entries()[k];
    if (entry.elements() == 0) continue;
    const std::vector<std::int64_t> dims = entry.value_dims();
    SURGE_CHECK(dims.size() <= static_cast<std::size_t>(kMaxTensorRank),
                "buffer '" + entry.name + "' has too high a rank");
    TensorView view;
    view.data = storage_.data() + entry.offset;
    view.dtype = entry.dtype;
    view.device = device();
    view.rank = static_cast<int>(dims.size());
    std::int64_t stride = 1;
    for (int d = view.rank - 1; d >= 0; --d) {
      view.shape[static_cast<std::size_t>(d)] = dims[static_cast<std::size_t>(d)];
      view.strides[static_cast<std::size_t>(d)] = stride;
      stride *= dims[static_cast<std::size_t>(d)];
    }
    const bool prefixed = !prefix.empty() && entry.name.rfind(prefix, 0) == 0;
    views.push_back({prefixed ? entry.name.substr(prefix.size()) : entry.name, view});
  }
  return views;
}

namespace {

// The bytes a checkpoint keeps of entry `index` of one replica: all of them, or `rows` of them.
Span<std::byte> kept_bytes(const BufferArena& arena, std::size_t index, int replica, const SavedRows* rows) {
  const Span<std::byte> all = arena.bytes_of(static_cast<int>(index), replica);
  if (!rows) return all;
  const BufferEntry& entry = arena.table().entries()[index];
  SURGE_CHECK(!entry.dims.empty() && entry.dims[0] == rows->total && rows->first >= 0 && rows->count >= 0 &&
                  rows->first + rows->count <= rows->total,
              "buffer '" + entry.name + "' is not " + std::to_string(rows->total) + " rows");
  const std::int64_t row_bytes = all.size / rows->total;
  return all.slice(rows->first * row_bytes, rows->count * row_bytes);
}

std::vector<std::int64_t> kept_dims(const BufferEntry& entry, const SavedRows* rows) {
  std::vector<std::int64_t> dims = entry.value_dims();
  if (rows) dims[0] = rows->count;
  return dims;
}

}  // namespace

std::vector<SavedBuffer> save_buffers(const BufferArena& arena, const Stream& stream, int replica,
                                      const SavedRows* rows) {
  std::vector<SavedBuffer> saved;
  for (std::size_t k = 0; k < arena.table().entries().size(); ++k) {
    const BufferEntry& entry = arena.table().entries()[k];
    if (!entry.saved() || entry.bytes() == 0) continue;
    saved.push_back({entry.saved_name(), entry.dtype, kept_dims(entry, rows), entry.agent(),
                     to_host(kept_bytes(arena, k, replica, rows), stream)});
  }
  return saved;
}

const SavedBuffer* find_saved(const std::vector<SavedBuffer>& saved, const std::string& name) {
  for (const SavedBuffer& buffer : saved)
    if (buffer.name == name) return &buffer;
  return nullptr;
}

void restore_buffers(const BufferArena& arena, const std::vector<SavedBuffer>& saved, const std::string& what,
                     const Stream& stream, int replica, const SavedRows* rows) {
  std::vector<std::pair<Span<std::byte>, const SavedBuffer*>> writes;  // every entry checked before one is written
  for (std::size_t k = 0; k < arena.table().entries().size(); ++k) {
    const BufferEntry& entry = arena.table().entries()[k];
    if (!entry.saved() || entry.bytes() == 0) continue;
    const std::string name = entry.saved_name();
    const SavedBuffer* found = find_saved(saved, name);
    if (!found) throw InputError(what + " lacks '" + name + "'; resume with a checkpoint of this run's kind");
    if (found->dtype != entry.dtype)
      throw InputError(what + "'s '" + name + "' holds " + dtype_name(found->dtype) + " values where this run keeps " +
                       dtype_name(entry.dtype) +
                       " (it was written by another version of surge, or is damaged), so the run "
                       "cannot continue exactly; evaluate the agent with 'surge eval' or train afresh");
    const Span<std::byte> target = kept_bytes(arena, k, replica, rows);
    if (found->bytes.size() != static_cast<std::size_t>(target.size))
      throw InputError(what + "'s '" + name + "' holds " +
                       std::to_string(found->bytes.size() / dtype_size(found->dtype)) + " values where this run has " +
                       std::to_string(static_cast<std::size_t>(target.size) / dtype_size(entry.dtype)) +
                       "; resume with the checkpoint's own config");
    writes.emplace_back(target, found);
  }
  for (const auto& [target, found] : writes) from_host(target, found->bytes, stream);
}

}  // namespace surge
