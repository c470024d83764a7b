// TensorBoard event files: CRC-32C against published check values, the protobuf encoding against
// bytes assembled by hand from the wire-format specification, and the writer read back by our
// decoder (TensorBoard's own reader checks the same files in check_tensorboard.py).
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "rl/io/crc32c.hpp"
#include "rl/io/tensorboard.hpp"
#include "sim/error.hpp"

namespace fs = std::filesystem;
using namespace surge;
using namespace surge::rl;

namespace {

std::string bytes_of(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

fs::path scratch_folder(const std::string& name) {
  const fs::path path = fs::temp_directory_path() / ("surge_test_tb_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(path);
  return path;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace

TEST_CASE("CRC-32C matches the published check values", "[tensorboard]") {
  // The catalogue check value, and the iSCSI test vectors of RFC 3720, section B.4.
  CHECK(crc32c("123456789") == 0xE3069283u);
  CHECK(crc32c("") == 0u);
  CHECK(crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  CHECK(crc32c(std::string(32, '\xFF')) == 0x62A8AB43u);
  std::string ascending, descending;
  for (int k = 0; k < 32; ++k) {
    ascending.push_back(static_cast<char>(k));
    descending.push_back(static_cast<char>(31 - k));
  }
  CHECK(crc32c(ascending) == 0x46DD794Eu);
  CHECK(crc32c(descending) == 0x113FDB5Cu);
}

TEST_CASE("CRC-32C continues across pieces, and masking inverts", "[tensorboard]") {
  const std::string text = "The quick brown fox jumps over the lazy dog";
  for (std::size_t cut : {std::size_t(0), std::size_t(1), std::size_t(17), text.size()}) {
    const std::uint32_t head = crc32c(text.data(), cut);
    CHECK(crc32c(text.data() + cut, text.size() - cut, head) == crc32c(text));
  }
  for (std::uint32_t crc : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu, 0x80000000u}) {
    CHECK(unmask_crc32c(mask_crc32c(crc)) == crc);
    CHECK(mask_crc32c(crc) == (((crc >> 15) | (crc << 17)) + 0xa282ead8u));
  }
}

TEST_CASE("Events encode to the protobuf wire format", "[tensorboard]") {
  // Event{wall_time=1.5, file_version="brain.Event:2"}: key 0x09 + little-endian double, key 0x1a + length.
  const std::string header = bytes_of({0x09, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F, 0x1A, 13}) + "brain.Event:2";
  CHECK(encode_file_version_event(1.5) == header);

  // Event{wall_time=2.0, step=300, summary=Summary{value=[Value{tag="a", simple_value=1.0f}]}}.
  // step 300 is the varint AC 02; Value = 0a 01 'a' 15 + float 1.0 (00 00 80 3f).
  const std::string value = bytes_of({0x0A, 1, 'a', 0x15, 0x00, 0x00, 0x80, 0x3F});
  const std::string summary = bytes_of({0x0A, static_cast<int>(value.size())}) + value;
  const std::string event =
      bytes_of({0x09, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x10, 0xAC, 0x02, 0x2A, static_cast<int>(summary.size())}) + summary;
  CHECK(encode_scalar_event(2.0, 300, {{"a", 1.0f}}) == event);
}

TEST_CASE("Records are framed with masked CRCs of the length and the data", "[tensorboard]") {
  const std::string data = "some payload";
  const std::string record = encode_tfrecord(data);
  REQUIRE(record.size() == 8 + 4 + data.size() + 4);
  std::uint64_t length = 0;
  for (int k = 0; k < 8; ++k) length |= std::uint64_t(static_cast<unsigned char>(record[k])) << (8 * k);
  CHECK(length == data.size());
  auto u32_at = [&](std::size_t offset) {
    std::uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v |= std::uint32_t(static_cast<unsigned char>(record[offset + k])) << (8 * k);
    return v;
  };
  CHECK(u32_at(8) == mask_crc32c(crc32c(record.data(), 8)));
  CHECK(record.substr(12, data.size()) == data);
  CHECK(u32_at(12 + data.size()) == mask_crc32c(crc32c(data)));
}

TEST_CASE("The writer's files decode back to what was written", "[tensorboard]") {
  const fs::path folder = scratch_folder("roundtrip") / "tb";
  fs::path file;
  const std::vector<std::string> tags = {"episode_return", "loss/policy", "approx_kl"};
  auto value_of = [](std::size_t tag, std::int64_t step) { return static_cast<float>((tag + 1) * 0.25 * step - 3.5); };
  {
    TensorBoardWriter writer(folder);  // creates the folder
    file = writer.path();
    for (std::int64_t step = 0; step < 2000; step += 128) {
      ScalarValues scalars;
      for (std::size_t t = 0; t < tags.size(); ++t) scalars.emplace_back(tags[t], value_of(t, step));
      writer.add_scalars(step, scalars, 1.0e9 + static_cast<double>(step));
    }
    // Values that must survive bit for bit, and a negative step.
    writer.add_scalars(-5,
                       {{"edge/min", std::numeric_limits<float>::denorm_min()},
                        {"edge/neg_zero", -0.0f},
                        {"edge/inf", std::numeric_limits<float>::infinity()},
                        {"edge/max", std::numeric_limits<float>::max()}},
                       0.0);
  }
  CHECK(file.parent_path() == folder);
  CHECK(file.filename().string().rfind("events.out.tfevents.", 0) == 0);

  const std::vector<TensorBoardEvent> events = read_tensorboard_events(file);
  REQUIRE(events.size() == 1 + 16 + 1);
  CHECK(events[0].file_version == "brain.Event:2");
  CHECK(events[0].scalars.empty());
  for (std::size_t k = 1; k <= 16; ++k) {
    const std::int64_t step = static_cast<std::int64_t>(k - 1) * 128;
    CHECK(events[k].step == step);
    CHECK(events[k].wall_time == 1.0e9 + static_cast<double>(step));
    CHECK(events[k].file_version.empty());
    REQUIRE(events[k].scalars.size() == tags.size());
    for (std::size_t t = 0; t < tags.size(); ++t) {
      CHECK(events[k].scalars[t].first == tags[t]);
      CHECK(events[k].scalars[t].second == value_of(t, step));
    }
  }
  const TensorBoardEvent& edge = events.back();
  CHECK(edge.step == -5);
  REQUIRE(edge.scalars.size() == 4);
  CHECK(edge.scalars[0].second == std::numeric_limits<float>::denorm_min());
  CHECK(std::signbit(edge.scalars[1].second));
  CHECK(edge.scalars[2].second == std::numeric_limits<float>::infinity());
  CHECK(edge.scalars[3].second == std::numeric_limits<float>::max());
  fs::remove_all(folder.parent_path());
}

TEST_CASE("The reader refuses corrupt and cut-short records", "[tensorboard]") {
  const fs::path folder = scratch_folder("corrupt");
  fs::path file;
  {
    TensorBoardWriter writer(folder);
    file = writer.path();
    writer.add_scalars(1, {{"x", 1.0f}});
    writer.add_scalars(2, {{"x", 2.0f}});
  }
  const std::string good = read_bytes(file);
  REQUIRE(read_tensorboard_events(file).size() == 3);

  std::string flipped = good;
  flipped[flipped.size() - 6] ^= 0x01;  // inside the last record's data
  write_bytes(file, flipped);
  CHECK_THROWS_WITH(read_tensorboard_events(file), Catch::Contains("bad data checksum"));

  std::string bad_length = good;
  bad_length[0] ^= 0x01;  // the first record's length no longer matches its CRC
  write_bytes(file, bad_length);
  CHECK_THROWS_WITH(read_tensorboard_events(file), Catch::Contains("bad length checksum") && Catch::Contains("byte 0"));

  write_bytes(file, good.substr(0, good.size() - 3));
  CHECK_THROWS_WITH(read_tensorboard_events(file), Catch::Contains("cut short"));

  CHECK_THROWS_AS(decode_event(bytes_of({0x0A, 0x05, 'a'})), Error);  // length past the end
  fs::remove_all(folder);
}

TEST_CASE("A folder that cannot be created is bad input", "[tensorboard]") {
  const fs::path folder = scratch_folder("blocked");
  fs::create_directories(folder);
  write_bytes(folder / "file", "not a folder");
  CHECK_THROWS_AS(TensorBoardWriter(folder / "file" / "tb"), InputError);
  fs::remove_all(folder);
}
