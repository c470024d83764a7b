#pragma once
// BufferArena replicas (K copies of one table's layout at a fixed distance), on either backend: the checks
// test_buffer_arena (CPU) and test_buffer_arena_gpu (CUDA) run.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/buffer_table.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "sim/memory_plan.hpp"

namespace surge::testing {

// An element of 12 bytes: 256-byte strides are not whole numbers of it unless the table's bytes are a multiple of 768.
struct Triple {
  float x, y, z;
};

struct ArenaSlots {
  Slot<float> weights;       // saved
  Slot<std::uint8_t> flags;  // scratch
  Slot<double> moments;      // saved, as a model's
  Slot<float> none;          // empty
  Slot<std::int64_t> counters;
  Slot<Triple> points;  // saved
};

inline BufferTable arena_table(ArenaSlots& s) {
  BufferTable t;
  s.weights = t.add<float>("learner.weights", {5, 3}, "[5][3]", "weights", kSaved);
  s.flags = t.add<std::uint8_t>("learner.flags", {3}, "[3]", "flags");
  s.moments = t.add<double>("learner.moments", {70}, "[70]", "moments", kSaved | kAgent);
  s.none = t.add<float>("learner.none", {0}, "[0]", "switched off", kSaved);
  s.counters = t.add<std::int64_t>("learner.counters", {4}, "[4]", "counters");
  s.points = t.add<Triple>(DType::Float32, "learner.points", {9}, "[9][3]", "points", kSaved);
  return t;
}

// Replica k's every non-empty entry: its bytes as they are on the device.
inline std::vector<std::vector<std::byte>> replica_bytes(const BufferArena& arena, int replica, const Stream& stream) {
  std::vector<std::vector<std::byte>> bytes;
  for (int e = 0; e < static_cast<int>(arena.table().entries().size()); ++e)
    bytes.push_back(to_host(arena.bytes_of(e, replica), stream));
  return bytes;
}

// Writes distinct values into every entry of every replica: byte i of replica k's entry e is (k, e, i) mixed.
inline void fill_replicas(const BufferArena& arena, const Stream& stream) {
  for (int k = 0; k < arena.replicas(); ++k)
    for (int e = 0; e < static_cast<int>(arena.table().entries().size()); ++e) {
      const Span<std::byte> bytes = arena.bytes_of(e, k);
      std::vector<std::byte> values(bytes.bytes());
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::byte>(37 * k + 11 * e + i % 251 + 1);
      from_host(bytes, values, stream);
    }
}

inline void check_arena_replicas(Device device) {
  Stream stream(device);
  ArenaSlots s;
  BufferTable table = arena_table(s);
  const std::size_t table_bytes = table.bytes();
  REQUIRE(table_bytes % 768 != 0);
  MemoryPlan plan(device), plan_one(device);
  table.add_to(plan, 3);
  table.add_to(plan_one);
  const BufferArena one(device, table, stream);
  const BufferArena arena(device, std::move(table), stream, 3);

  // The layout: K copies at the table's bytes, each entry at its offset, aligned; the plan adds up to it.
  CHECK(one.replicas() == 1);
  CHECK(one.replica_stride_bytes() == table_bytes);
  CHECK(arena.replicas() == 3);
  CHECK(arena.replica_stride_bytes() == table_bytes);
  CHECK(arena.replica_stride_bytes() % 256 == 0);
  CHECK(arena.device_bytes() == 3 * table_bytes);
  CHECK(plan.allocated_bytes() == arena.device_bytes());
  CHECK(plan_one.allocated_bytes() == one.device_bytes());
  REQUIRE(plan.buffers().size() == 5);  // the empty entry left out
  CHECK(plan.buffers()[0].shape == "[K][5][3]");
  CHECK(plan.buffers()[0].bytes() == 3 * 15 * sizeof(float));
  CHECK(plan.buffers()[1].allocated_bytes() == 3 * 256);  // 3 bytes per replica, each rounded on its own
  CHECK(plan_one.buffers()[0].shape == "[5][3]");
  for (int k = 0; k < 3; ++k) {
    INFO("replica " << k);
    CHECK(reinterpret_cast<std::uintptr_t>(arena.data(s.weights, k)) % 256 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(arena.data(s.moments, k)) % 256 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(arena.data(s.points, k)) % 256 == 0);
    CHECK(arena.data(s.weights, k) == arena.data(s.weights) + k * arena.replica_stride(s.weights));
    CHECK(arena.data(s.moments, k) == arena.data(s.moments) + k * arena.replica_stride(s.moments));
    CHECK(arena.data(s.counters, k) == arena.data(s.counters, 0) + k * arena.replica_stride(s.counters));
    CHECK(arena.at(s.weights, k).size == 15);
    CHECK(arena.at(s.none, k).data == nullptr);
    for (const std::vector<std::byte>& entry : replica_bytes(arena, k, stream))  // zeroed, every replica
      for (std::byte b : entry) REQUIRE(b == std::byte{0});
  }
  CHECK_THROWS(arena.replica_stride(s.points));  // 12-byte elements do not divide the stride
  CHECK_THROWS(arena.at(s.weights, 3));
  CHECK_THROWS(arena.at(s.weights, -1));
  CHECK_THROWS(one.at(s.weights, 1));

  // Replicas are independent: writing replica 1 leaves 0 and 2.
  from_host(arena.at(s.weights, 1), std::vector<float>(15, 2.5f), stream);
  CHECK(to_host(arena.at(s.weights, 1), stream) == std::vector<float>(15, 2.5f));
  CHECK(to_host(arena.at(s.weights, 0), stream) == std::vector<float>(15, 0.0f));
  CHECK(to_host(arena.at(s.weights, 2), stream) == std::vector<float>(15, 0.0f));

  // save_buffers of replica k holds replica k's saved entries; restoring it into replica 2 changes replica 2's
  // saved entries only.
  fill_replicas(arena, stream);
  std::vector<std::vector<std::vector<std::byte>>> before;
  for (int k = 0; k < 3; ++k) before.push_back(replica_bytes(arena, k, stream));
  const std::vector<SavedBuffer> saved1 = save_buffers(arena, stream, 1);
  REQUIRE(saved1.size() == 3);  // weights, moments, points
  CHECK(saved1[0].name == "weights");
  CHECK(saved1[0].bytes == before[1][0]);
  CHECK(saved1[1].agent);
  CHECK(saved1[1].bytes == before[1][2]);
  CHECK(saved1[2].bytes == before[1][5]);
  CHECK(saved1[2].dims == std::vector<std::int64_t>{9, 3});
  const std::vector<SavedBuffer> saved0 = save_buffers(arena, stream);
  CHECK(saved0[0].bytes == before[0][0]);
  CHECK(saved0[0].bytes != saved1[0].bytes);  // the replicas do differ
  restore_buffers(arena, saved1, "replica 1", stream, 2);
  const std::vector<std::vector<std::byte>> after2 = replica_bytes(arena, 2, stream);
  CHECK(replica_bytes(arena, 0, stream) == before[0]);
  CHECK(replica_bytes(arena, 1, stream) == before[1]);
  for (int e : {0, 2, 5}) CHECK(after2[e] == before[1][e]);
  for (int e : {1, 4}) CHECK(after2[e] == before[2][e]);  // not saved: untouched
  CHECK(after2[1] != before[1][1]);
  // A round trip: replica 1 overwritten, then restored from its own save.
  from_host(arena.at(s.moments, 1), std::vector<double>(70, -1.0), stream);
  CHECK(replica_bytes(arena, 1, stream) != before[1]);
  restore_buffers(arena, saved1, "replica 1", stream, 1);
  CHECK(replica_bytes(arena, 1, stream) == before[1]);
  CHECK(replica_bytes(arena, 0, stream) == before[0]);
  CHECK_THROWS(save_buffers(arena, stream, 3));
}

// Rows of every saved entry (one agent's environments of an engine of several): saved and restored alone,
// the other rows and the unsaved entries untouched; a damaged save is refused before anything is written.
inline void check_saved_rows(Device device) {
  Stream stream(device);
  BufferTable table;
  const auto states = table.add<float>("env.states", {6, 3}, "[6][3]", "states", kSaved);
  table.add<std::uint8_t>("env.scratch", {6}, "[6]", "scratch");
  table.add<float>("env.switched_off", {0}, "[0]", "switched off", kSaved);
  table.add<Triple>(DType::Float32, "env.points", {6}, "[6][3]", "points", kSaved);
  const auto counts = table.add<std::int64_t>("env.counts", {6, 2}, "[6][2]", "counts", kSaved);
  const BufferArena arena(device, std::move(table), stream);
  fill_replicas(arena, stream);
  const std::vector<std::vector<std::byte>> before = replica_bytes(arena, 0, stream);
  const std::vector<SavedBuffer> whole = save_buffers(arena, stream);

  const SavedRows middle{2, 2, 6}, last{4, 2, 6};
  const std::vector<SavedBuffer> saved = save_buffers(arena, stream, 0, &middle);
  REQUIRE(saved.size() == 3);
  for (std::size_t e = 0; e < saved.size(); ++e) {
    INFO("entry " << saved[e].name);
    CHECK(saved[e].name == whole[e].name);
    CHECK(saved[e].dims[0] == 2);
    CHECK(saved[e].dims.back() == whole[e].dims.back());
    const std::size_t row = whole[e].bytes.size() / 6;
    CHECK(saved[e].bytes == std::vector<std::byte>(whole[e].bytes.begin() + 2 * row, whole[e].bytes.begin() + 4 * row));
  }

  // Rows 2-3 put into rows 4-5: those rows of the saved entries change, nothing else.
  restore_buffers(arena, saved, "rows 2-3", stream, 0, &last);
  const std::vector<std::vector<std::byte>> after = replica_bytes(arena, 0, stream);
  for (int e : {0, 3, 4}) {
    INFO("entry " << e);
    const std::size_t row = before[e].size() / 6;
    CHECK(std::vector<std::byte>(after[e].begin(), after[e].begin() + 4 * row) ==
          std::vector<std::byte>(before[e].begin(), before[e].begin() + 4 * row));
    CHECK(std::vector<std::byte>(after[e].begin() + 4 * row, after[e].end()) ==
          std::vector<std::byte>(before[e].begin() + 2 * row, before[e].begin() + 4 * row));
  }
  CHECK(after[1] == before[1]);
  CHECK(after[0] != before[0]);

  // One value short in the last entry, or an entry missing: refused, and the first entry is not written either.
  std::vector<SavedBuffer> short_save = save_buffers(arena, stream, 0, &middle);
  from_host(arena.at(states, 0), std::vector<float>(18, 7.0f), stream);
  short_save.back().bytes.resize(short_save.back().bytes.size() - sizeof(std::int64_t));
  CHECK_THROWS_AS(restore_buffers(arena, short_save, "rows", stream, 0, &last), InputError);
  std::vector<SavedBuffer> missing = save_buffers(arena, stream, 0, &middle);
  missing.pop_back();
  CHECK_THROWS_AS(restore_buffers(arena, missing, "rows", stream, 0, &last), InputError);
  CHECK(to_host(arena.at(states, 0), stream) == std::vector<float>(18, 7.0f));
  // The whole entries are not rows of another count, nor rows out of range.
  const SavedRows wrong_total{0, 1, 5}, past_end{5, 2, 6};
  CHECK_THROWS(save_buffers(arena, stream, 0, &wrong_total));
  CHECK_THROWS(save_buffers(arena, stream, 0, &past_end));
  CHECK(to_host(arena.at(counts, 0), stream).size() == 12);
}

}  // namespace surge::testing
