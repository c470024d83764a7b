#include "rl/io/tensorboard.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "rl/io/crc32c.hpp"
#include "sim/error.hpp"

namespace surge::rl {
namespace {

// ---- protobuf wire format (little-endian fixed widths, base-128 varints) ----------------------

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_fixed(std::string& out, std::uint64_t bits, int bytes) {
  for (int k = 0; k < bytes; ++k) out.push_back(static_cast<char>((bits >> (8 * k)) & 0xFF));
}

void put_key(std::string& out, std::uint32_t field, WireType type) { put_varint(out, (field << 3) | type); }

void put_bytes_field(std::string& out, std::uint32_t field, std::string_view bytes) {
  put_key(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

void put_double_field(std::string& out, std::uint32_t field, double value) {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  put_key(out, field, kFixed64);
  put_fixed(out, bits, 8);
}

void put_float_field(std::string& out, std::uint32_t field, float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  put_key(out, field, kFixed32);
  put_fixed(out, bits, 4);
}

std::uint64_t get_fixed(const char* p, int bytes) {
  std::uint64_t bits = 0;
  for (int k = 0; k < bytes; ++k) bits |= std::uint64_t(static_cast<unsigned char>(p[k])) << (8 * k);
  return bits;
}

// Walks the fields of one message; skips the ones the caller does not ask about.
class FieldReader {
 public:
  FieldReader(std::string_view message, const char* what) : rest_(message), what_(what) {}

  bool next() {
    if (rest_.empty()) return false;
    const std::uint64_t key = varint();
    field_ = static_cast<std::uint32_t>(key >> 3);
    type_ = static_cast<std::uint32_t>(key & 7);
    switch (type_) {
      case kVarint: scalar_ = varint(); break;
      case kFixed64: scalar_ = get_fixed(take(8).data(), 8); break;
      case kFixed32: scalar_ = get_fixed(take(4).data(), 4); break;
      case kLengthDelimited: bytes_ = take(varint()); break;
      default: fail("unsupported wire type " + std::to_string(type_));
    }
    return true;
  }
  std::uint32_t field() const { return field_; }
  std::uint32_t type() const { return type_; }
  std::uint64_t scalar() const { return scalar_; }
  std::string_view bytes() const { return bytes_; }
  void expect(WireType type) const {
    if (type_ != type) fail("field " + std::to_string(field_) + " has wire type " + std::to_string(type_));
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw Error(std::string("malformed ") + what_ + ": " + why); }
  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (rest_.empty()) fail("varint cut short");
      const auto byte = static_cast<unsigned char>(rest_.front());
      rest_.remove_prefix(1);
      value |= std::uint64_t(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return value;
    }
    fail("varint longer than 10 bytes");
  }
  std::string_view take(std::uint64_t count) {
    if (count > rest_.size()) fail("field runs past the end of the message");
    const std::string_view head = rest_.substr(0, count);
    rest_.remove_prefix(count);
    return head;
  }

  std::string_view rest_;
  const char* what_;
  std::uint32_t field_ = 0, type_ = 0;
  std::uint64_t scalar_ = 0;
  std::string_view bytes_;
};

constexpr std::uint32_t kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5;
constexpr std::uint32_t kSummaryValue = 1;
constexpr std::uint32_t kValueTag = 1, kValueSimpleValue = 2;
constexpr const char* kFileVersion = "brain.Event:2";

std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

std::string encode_tfrecord(std::string_view data) {
  std::string record;
  record.reserve(data.size() + 16);
  put_fixed(record, data.size(), 8);
  put_fixed(record, mask_crc32c(crc32c(record.data(), 8)), 4);
  record.append(data);
  put_fixed(record, mask_crc32c(crc32c(data)), 4);
  return record;
}

std::string encode_file_version_event(double wall_time) {
  std::string event;
  put_double_field(event, kEventWallTime, wall_time);
  put_bytes_field(event, kEventFileVersion, kFileVersion);
  return event;
}

std::string encode_scalar_event(double wall_time, std::int64_t step, const ScalarValues& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string encoded_value;
    put_bytes_field(encoded_value, kValueTag, tag);
    put_float_field(encoded_value, kValueSimpleValue, value);
    put_bytes_field(summary, kSummaryValue, encoded_value);
  }
  std::string event;
  put_double_field(event, kEventWallTime, wall_time);
  put_key(event, kEventStep, kVarint);
  put_varint(event, static_cast<std::uint64_t>(step));  // int64: negatives take ten bytes, as protobuf does
  put_bytes_field(event, kEventSummary, summary);
  return event;
}

namespace {

// One Summary.Value carrying plugin metadata { plugin_data { plugin_name, content } } and, for text, a
// string tensor { dtype = DT_STRING (7), tensor_shape = {} (a scalar), string_val }.
std::string plugin_value(std::string_view tag, std::string_view plugin, std::string_view content,
                         const std::string* text) {
  std::string plugin_data, metadata, value;
  put_bytes_field(plugin_data, 1, plugin);
  if (!content.empty()) put_bytes_field(plugin_data, 2, content);
  put_bytes_field(metadata, 1, plugin_data);
  put_bytes_field(value, kValueTag, tag);
  put_bytes_field(value, 9, metadata);
  if (text) {
    std::string tensor;
    put_key(tensor, 1, kVarint);
    put_varint(tensor, 7);
    put_bytes_field(tensor, 2, "");
    put_bytes_field(tensor, 8, *text);
    put_bytes_field(value, 8, tensor);
  }
  return value;
}

std::string event_of_values(double wall_time, std::int64_t step, const std::string& values) {
  std::string summary, event;
  put_bytes_field(summary, kSummaryValue, values);
  put_double_field(event, kEventWallTime, wall_time);
  put_key(event, kEventStep, kVarint);
  put_varint(event, static_cast<std::uint64_t>(step));
  put_bytes_field(event, kEventSummary, summary);
  return event;
}

}  // namespace

std::string encode_text_event(double wall_time, std::int64_t step, const std::string& tag, const std::string& text) {
  return event_of_values(wall_time, step, plugin_value(tag, "text", "", &text));
}

std::string encode_hparams_event(double wall_time, const HParams& hparams) {
  // HParamsPluginData { version = 1 (0); session_start_info = 3 { map<string, Value> hparams = 1;
  // double start_time_secs = 5 } }, Value { number_value = 2 (double); string_value = 3; bool_value = 4 }.
  std::string start;
  for (const auto& [name, value] : hparams) {
    std::string encoded, entry;
    if (const double* number = std::get_if<double>(&value)) {
      put_double_field(encoded, 2, *number);
    } else if (const bool* flag = std::get_if<bool>(&value)) {
      put_key(encoded, 4, kVarint);
      put_varint(encoded, *flag ? 1 : 0);
    } else {
      put_bytes_field(encoded, 3, std::get<std::string>(value));
    }
    put_bytes_field(entry, 1, name);
    put_bytes_field(entry, 2, encoded);
    put_bytes_field(start, 1, entry);
  }
  put_double_field(start, 5, wall_time);
  std::string data;
  put_key(data, 1, kVarint);
  put_varint(data, 0);
  put_bytes_field(data, 3, start);
  return event_of_values(wall_time, 0, plugin_value("_hparams_/session_start_info", "hparams", data, nullptr));
}

TensorBoardEvent decode_event(std::string_view message) {
  TensorBoardEvent event;
  FieldReader fields(message, "Event");
  while (fields.next()) {
    if (fields.field() == kEventWallTime) {
      fields.expect(kFixed64);
      const std::uint64_t bits = fields.scalar();
      std::memcpy(&event.wall_time, &bits, sizeof bits);
    } else if (fields.field() == kEventStep) {
      fields.expect(kVarint);
      event.step = static_cast<std::int64_t>(fields.scalar());
    } else if (fields.field() == kEventFileVersion) {
      fields.expect(kLengthDelimited);
      event.file_version = std::string(fields.bytes());
    } else if (fields.field() == kEventSummary) {
      fields.expect(kLengthDelimited);
      FieldReader summary(fields.bytes(), "Summary");
      while (summary.next()) {
        if (summary.field() != kSummaryValue) continue;
        summary.expect(kLengthDelimited);
        FieldReader value(summary.bytes(), "Summary.Value");
        std::string tag;
        bool has_simple_value = false;
        float simple_value = 0.0f;
        while (value.next()) {
          if (value.field() == kValueTag) {
            value.expect(kLengthDelimited);
            tag = std::string(value.bytes());
          } else if (value.field() == kValueSimpleValue) {
            value.expect(kFixed32);
            const auto bits = static_cast<std::uint32_t>(value.scalar());
            std::memcpy(&simple_value, &bits, sizeof bits);
            has_simple_value = true;
          }
        }
        if (has_simple_value) event.scalars.emplace_back(std::move(tag), simple_value);
      }
    }
  }
  return event;
}

std::vector<TensorBoardEvent> read_tensorboard_events(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("cannot open TensorBoard event file '" + file.string() + "'");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  std::vector<TensorBoardEvent> events;
  std::size_t offset = 0;
  auto fail = [&](const std::string& why) {
    throw Error("TensorBoard event file '" + file.string() + "': record at byte " + std::to_string(offset) + " " + why);
  };
  while (offset < bytes.size()) {
    if (bytes.size() - offset < 12) fail("is cut short in its header");
    const char* header = bytes.data() + offset;
    const std::uint64_t length = get_fixed(header, 8);
    if (static_cast<std::uint32_t>(get_fixed(header + 8, 4)) != mask_crc32c(crc32c(header, 8)))
      fail("has a bad length checksum");
    if (length > bytes.size() - offset - 12 || bytes.size() - offset - 12 - length < 4)
      fail("is cut short in its data");
    const std::string_view data(header + 12, length);
    if (static_cast<std::uint32_t>(get_fixed(header + 12 + length, 4)) != mask_crc32c(crc32c(data)))
      fail("has a bad data checksum");
    events.push_back(decode_event(data));
    offset += 12 + length + 4;
  }
  return events;
}

double wall_clock_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

TensorBoardWriter::TensorBoardWriter(const std::filesystem::path& folder) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (!std::filesystem::is_directory(folder))
    throw InputError("cannot create the TensorBoard folder '" + folder.string() +
                     "': check that its parent is writable");
  const double now = wall_clock_seconds();
  path_ = folder / ("events.out.tfevents." + std::to_string(static_cast<std::int64_t>(now)) + "." + hostname() + "." +
                    std::to_string(::getpid()));
  file_ = std::fopen(path_.c_str(), "wb");
  if (!file_)
    throw InputError("cannot create TensorBoard event file '" + path_.string() + "': " + std::strerror(errno));
  write_record(encode_file_version_event(now));
}

TensorBoardWriter::~TensorBoardWriter() { close(); }

void TensorBoardWriter::add_scalars(std::int64_t step, const ScalarValues& scalars, double wall_time) {
  SURGE_CHECK(file_, "TensorBoard writer used after close()");
  write_record(encode_scalar_event(wall_time, step, scalars));
}

void TensorBoardWriter::add_text(std::int64_t step, const std::string& tag, const std::string& text) {
  SURGE_CHECK(file_, "TensorBoard writer used after close()");
  write_record(encode_text_event(wall_clock_seconds(), step, tag, text));
}

void TensorBoardWriter::add_hparams(const HParams& hparams) {
  SURGE_CHECK(file_, "TensorBoard writer used after close()");
  write_record(encode_hparams_event(wall_clock_seconds(), hparams));
}

void TensorBoardWriter::write_record(const std::string& data) {
  const std::string record = encode_tfrecord(data);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() || std::fflush(file_) != 0)
    throw Error("cannot write TensorBoard events to '" + path_.string() + "': " + std::strerror(errno));
}

void TensorBoardWriter::close() {
  if (file_) std::fclose(file_);
  file_ = nullptr;
}

}  // namespace surge::rl
