#include "source/wds/tar.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace msd {

namespace {

// Field offsets and widths of the ustar header (POSIX.1-1988).
constexpr size_t name_offset = 0, name_bytes = 100;
constexpr size_t mode_offset = 100, uid_offset = 108, gid_offset = 116;
constexpr size_t size_offset = 124, size_bytes_field = 12;
constexpr size_t mtime_offset = 136;
constexpr size_t checksum_offset = 148, checksum_bytes = 8;
constexpr size_t type_offset = 156;
constexpr size_t magic_offset = 257;
constexpr size_t version_offset = 263;
constexpr size_t prefix_offset = 345, prefix_bytes = 155;

uint64_t padded(uint64_t size) { return (size + tar_block_bytes - 1) / tar_block_bytes * tar_block_bytes; }

std::string_view field_string(std::span<const unsigned char> header, size_t offset, size_t width) {
  const char* p = reinterpret_cast<const char*>(header.data() + offset);
  size_t length = 0;
  while (length < width && p[length] != '\0') ++length;
  return {p, length};
}

// Octal number with optional leading spaces and trailing NUL/space; GNU
// base-256 when the first byte has its high bit set.
bool parse_number(std::span<const unsigned char> header, size_t offset, size_t width, uint64_t& value) {
  value = 0;
  if (header[offset] & 0x80) {
    if (header[offset] != 0x80) return false;  // negative or > 2^88: not a size
    for (size_t i = 1; i < width; ++i) {
      if (value >> 56) return false;
      value = (value << 8) | header[offset + i];
    }
    return value < (uint64_t{1} << 62);
  }
  size_t i = 0;
  while (i < width && header[offset + i] == ' ') ++i;
  bool any = false;
  for (; i < width; ++i) {
    unsigned char c = header[offset + i];
    if (c == '\0' || c == ' ') break;
    if (c < '0' || c > '7') return false;
    if (value >> 60) return false;
    value = value * 8 + (c - '0');
    any = true;
  }
  for (; i < width; ++i)
    if (header[offset + i] != '\0' && header[offset + i] != ' ') return false;
  return any;
}

bool all_zero(std::span<const unsigned char> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](unsigned char c) { return c == 0; });
}

// The "path" record of a pax extended header ("<len> <key>=<value>\n"...);
// empty when absent. False when the records are malformed.
bool pax_path(std::string_view records, std::string& path) {
  size_t pos = 0;
  while (pos < records.size()) {
    if (records[pos] == '\0') break;  // padding some writers leave
    size_t space = records.find(' ', pos);
    if (space == std::string_view::npos) return false;
    uint64_t length = 0;
    for (size_t i = pos; i < space; ++i) {
      if (records[i] < '0' || records[i] > '9' || length > records.size()) return false;
      length = length * 10 + static_cast<uint64_t>(records[i] - '0');
    }
    if (length < space - pos + 3 || pos + length > records.size() || records[pos + length - 1] != '\n')
      return false;
    std::string_view record = records.substr(space + 1, pos + length - space - 2);
    size_t equals = record.find('=');
    if (equals == std::string_view::npos) return false;
    if (record.substr(0, equals) == "path") path = std::string(record.substr(equals + 1));
    pos += length;
  }
  return true;
}

}  // namespace

bool tar_checksum_ok(std::span<const unsigned char> header) {
  uint64_t stored = 0;
  if (!parse_number(header, checksum_offset, checksum_bytes, stored)) return false;
  uint64_t unsigned_sum = 0;
  int64_t signed_sum = 0;
  for (size_t i = 0; i < tar_block_bytes; ++i) {
    bool in_field = i >= checksum_offset && i < checksum_offset + checksum_bytes;
    unsigned char c = in_field ? ' ' : header[i];
    unsigned_sum += c;
    signed_sum += static_cast<signed char>(c);
  }
  return stored == unsigned_sum || static_cast<int64_t>(stored) == signed_sum;
}

bool TarScanner::halt(Stop why, uint64_t offset) {
  stop_ = why;
  stop_offset_ = offset;
  return false;
}

bool TarScanner::next(TarMember& member) {
  if (stop_ != Stop::none) return false;
  std::string long_name;
  std::string extended_path;
  while (true) {
    uint64_t size = bytes_.size();
    if (pos_ >= size) return halt(Stop::end, size);
    if (size - pos_ < tar_block_bytes) {
      if (all_zero(bytes_.subspan(pos_))) return halt(Stop::end, pos_);
      return halt(Stop::truncated, pos_);
    }
    auto header = bytes_.subspan(pos_, tar_block_bytes);
    if (all_zero(header)) return halt(Stop::end, pos_);
    if (!tar_checksum_ok(header)) return halt(Stop::bad_checksum, pos_);
    uint64_t member_bytes = 0;
    if (!parse_number(header, size_offset, size_bytes_field, member_bytes)) return halt(Stop::bad_header, pos_);
    char type = static_cast<char>(header[type_offset]);
    uint64_t data_offset = pos_ + tar_block_bytes;
    bool truncated = member_bytes > size - data_offset;
    std::string_view data;
    if (!truncated) data = {reinterpret_cast<const char*>(bytes_.data() + data_offset), member_bytes};

    if (type == 'L' || type == 'x') {
      if (truncated) return halt(Stop::truncated, pos_);
      if (type == 'L') {
        long_name.assign(data.substr(0, data.find('\0')));
      } else if (!pax_path(data, extended_path)) {
        return halt(Stop::bad_header, pos_);
      }
      pos_ = data_offset + padded(member_bytes);
      continue;
    }
    if (type != '0' && type != '\0' && type != '7') {
      // Directories, links, devices, global pax headers: nothing to read, but
      // any long name or pax path belonged to this entry.
      if (truncated) return halt(Stop::truncated, pos_);
      long_name.clear();
      extended_path.clear();
      pos_ = data_offset + padded(member_bytes);
      continue;
    }
    if (!extended_path.empty()) {
      member.name = std::move(extended_path);
    } else if (!long_name.empty()) {
      member.name = std::move(long_name);
    } else {
      member.name.assign(field_string(header, name_offset, name_bytes));
      std::string_view prefix = field_string(header, prefix_offset, prefix_bytes);
      bool posix = std::memcmp(header.data() + magic_offset, "ustar\0", 6) == 0;
      if (posix && !prefix.empty()) member.name = std::string(prefix) + "/" + member.name;
    }
    member.header_offset = pos_;
    member.data_offset = data_offset;
    member.size_bytes = member_bytes;
    member.truncated = truncated;
    if (truncated) {
      stop_ = Stop::truncated;
      stop_offset_ = pos_;
      pos_ = size;
    } else {
      pos_ = data_offset + padded(member_bytes);
    }
    return true;
  }
}

void make_tar_header(std::span<unsigned char, tar_block_bytes> header, std::string_view name, uint64_t size_bytes,
                     char type) {
  MSD_CHECK_LE(name.size(), name_bytes);
  std::fill(header.begin(), header.end(), 0);
  auto put = [&](size_t offset, std::string_view text) { std::memcpy(header.data() + offset, text.data(), text.size()); };
  auto put_octal = [&](size_t offset, size_t digits, uint64_t value) {
    for (size_t i = digits; i-- > 0;) {
      header[offset + i] = static_cast<unsigned char>('0' + (value & 7));
      value >>= 3;
    }
    MSD_CHECK_EQ(value, uint64_t{0});
  };
  put(name_offset, name);
  put_octal(mode_offset, 7, 0644);
  put_octal(uid_offset, 7, 0);
  put_octal(gid_offset, 7, 0);
  if (size_bytes < (uint64_t{1} << 33)) {
    put_octal(size_offset, 11, size_bytes);
  } else {
    header[size_offset] = 0x80;  // GNU base-256 for members of 8 GiB and more
    for (size_t i = size_bytes_field; i-- > 1;) {
      header[size_offset + i] = static_cast<unsigned char>(size_bytes & 0xFF);
      size_bytes >>= 8;
    }
  }
  // mtime 0 keeps written shards byte-identical from run to run.
  put_octal(mtime_offset, 11, 0);
  header[type_offset] = static_cast<unsigned char>(type);
  put(magic_offset, std::string_view("ustar\0", 6));
  put(version_offset, "00");
  std::memset(header.data() + checksum_offset, ' ', checksum_bytes);
  uint64_t sum = 0;
  for (unsigned char c : header) sum += c;
  put_octal(checksum_offset, 6, sum);
  header[checksum_offset + 6] = '\0';
  header[checksum_offset + 7] = ' ';
}

TarWriter::TarWriter(const std::string& path) : path_(path), temp_path_(str(path, ".tmp.", ::getpid())) {
  file_ = std::fopen(temp_path_.c_str(), "wb");
  if (file_ == nullptr) throw IoError(str("cannot create ", temp_path_, ": ", std::strerror(errno)));
}

TarWriter::~TarWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    ::unlink(temp_path_.c_str());
  }
}

void TarWriter::write_raw(const void* data, size_t bytes) {
  MSD_CHECK(file_ != nullptr);
  if (bytes > 0 && std::fwrite(data, 1, bytes, file_) != bytes)
    throw IoError(str("cannot write ", temp_path_, ": ", std::strerror(errno)));
  bytes_written_ += bytes;
}

void TarWriter::write_entry(char type, std::string_view name, std::string_view bytes) {
  std::array<unsigned char, tar_block_bytes> header{};
  make_tar_header(header, name, bytes.size(), type);
  write_raw(header.data(), header.size());
  write_raw(bytes.data(), bytes.size());
  static const std::array<unsigned char, tar_block_bytes> zeros{};
  write_raw(zeros.data(), padded(bytes.size()) - bytes.size());
}

void TarWriter::add(const std::string& name, std::string_view bytes) {
  if (name.size() > name_bytes) {
    std::string record = name;
    record.push_back('\0');
    write_entry('L', "././@LongLink", record);
    write_entry('0', std::string_view(name).substr(0, name_bytes), bytes);
    return;
  }
  write_entry('0', name, bytes);
}

void TarWriter::add_with_pax_path(const std::string& name, std::string_view bytes) {
  // A record's length counts its own decimal digits: grow until it is stable.
  std::string body = " path=" + name + "\n";
  size_t length = body.size();
  while (std::to_string(length).size() + body.size() != length) length = std::to_string(length).size() + body.size();
  std::string record = std::to_string(length) + body;
  std::string placeholder = name.substr(0, std::min<size_t>(name.size(), 90));
  write_entry('x', "PaxHeaders/" + placeholder.substr(0, 80), record);
  write_entry('0', placeholder, bytes);
}

void TarWriter::finish() {
  MSD_CHECK(file_ != nullptr);
  static const std::array<unsigned char, 2 * tar_block_bytes> end_blocks{};
  write_raw(end_blocks.data(), end_blocks.size());
  bool ok = std::fflush(file_) == 0;
  ok = std::fclose(file_) == 0 && ok;
  file_ = nullptr;
  if (!ok) {
    ::unlink(temp_path_.c_str());
    throw IoError(str("cannot write ", temp_path_, ": ", std::strerror(errno)));
  }
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    ::unlink(temp_path_.c_str());
    throw IoError(str("cannot rename ", temp_path_, " to ", path_, ": ", std::strerror(err)));
  }
}

}  // namespace msd
