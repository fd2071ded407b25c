// POSIX tar (ustar) reading and writing, as much as WebDataset shards need:
// regular members, directories and links skipped, GNU long names ('L'), pax
// extended headers ('x': the path record), GNU base-256 sizes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

namespace msd {

constexpr size_t tar_block_bytes = 512;

// One regular member found by TarScanner.
struct TarMember {
  std::string name;           // full path (long-name and pax records applied)
  uint64_t header_offset = 0;  // offset of the member's own ustar header
  uint64_t data_offset = 0;    // offset of the first data byte
  uint64_t size_bytes = 0;     // as declared by the header
  bool truncated = false;      // the data runs past the end of the archive
};

// Walks the members of an archive held in memory (a mapped file). Stops at the
// end-of-archive zero block, at the end of the bytes, at a header whose
// checksum is wrong, or after a truncated member. Not thread-safe.
class TarScanner {
 public:
  enum class Stop : uint8_t {
    none,          // still scanning
    end,           // zero block or exactly the end of the bytes
    bad_checksum,  // a header failed its checksum at stop_offset()
    bad_header,    // a header with an unreadable size field at stop_offset()
    truncated,     // the archive ends inside a header or member at stop_offset()
  };

  explicit TarScanner(std::span<const unsigned char> bytes) : bytes_(bytes) {}

  // The next regular member, or false when the scan stopped (see stop()). A
  // truncated member is returned once (with truncated set) before stopping.
  bool next(TarMember& member);
  Stop stop() const { return stop_; }
  uint64_t stop_offset() const { return stop_offset_; }

 private:
  bool halt(Stop why, uint64_t offset);

  std::span<const unsigned char> bytes_;
  uint64_t pos_ = 0;
  Stop stop_ = Stop::none;
  uint64_t stop_offset_ = 0;
};

// True when the 512-byte `header` carries a valid checksum (unsigned sum, or
// the signed sum some old writers used).
bool tar_checksum_ok(std::span<const unsigned char> header);

// Writes a ustar archive. Members go to "<path>.tmp.<pid>", renamed to `path`
// by finish(), so a reader never sees a half-written shard. Names longer than
// 100 bytes get a GNU 'L' record. Not thread-safe. Throws IoError.
class TarWriter {
 public:
  explicit TarWriter(const std::string& path);
  ~TarWriter();  // without finish(): removes the temporary file
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;

  // Appends a regular file member.
  void add(const std::string& name, std::string_view bytes);
  // Appends a regular file member whose path travels in a pax 'x' record (the
  // ustar name field gets a shortened placeholder).
  void add_with_pax_path(const std::string& name, std::string_view bytes);
  // Ends the archive (two zero blocks), flushes and renames into place.
  void finish();
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  void write_entry(char type, std::string_view name, std::string_view bytes);
  void write_raw(const void* data, size_t bytes);

  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  uint64_t bytes_written_ = 0;
};

// A 512-byte ustar header for an entry of `type` ('0' file, 'L', 'x', ...).
// REQUIRES: name.size() <= 100.
void make_tar_header(std::span<unsigned char, tar_block_bytes> header, std::string_view name, uint64_t size_bytes,
                     char type);

}  // namespace msd
