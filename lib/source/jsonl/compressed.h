// Compressed JSON lines (.jsonl.zst, .jsonl.gz, .json.gz): the records of a
// compressed file are those of its decompressed bytes. Random access goes
// through restart points, places in the compressed file where decompression
// can begin, each with the uncompressed offset it produces there; they are
// found by one pass over the file when it is indexed and cached with the line
// offsets (docs/formats.md "Compressed JSON lines").
//
//   zstd  a restart point is the start of every frame (but empty ones). libzstd's public API
//         cannot enter a frame in the middle, so a file of one frame (what
//         `zstd FILE` writes) has one restart point: reading any record
//         decompresses from the start of the file up to it. Files of many
//         frames (msd-datagen --compress zst, `pzstd`, concatenated `zstd`
//         outputs, the seekable format) read from the frame holding the record.
//   gzip  a restart point is the start of a gzip member, or the end of a
//         deflate block together with the 32 KiB of output before it (the
//         dictionary the next block may refer back into), as in zlib's
//         examples/zran.c. The windows are kept deflated.
//
// gzip points are at least `spacing_bytes` of output apart (each costs a
// window of up to 32 KiB, deflated), zstd points as far apart as the frames:
// a read decompresses on average about half that much before its record.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/storage.h"

namespace msd {

enum class Compression : uint8_t { none = 0, gzip = 1, zstd = 2 };
const char* compression_name(Compression compression);  // "none", "gzip", "zstd"

// By the file name's ending: ".gz" gzip, ".zst" zstd, anything else none.
Compression compression_of_path(const std::string& path);

// Default distance between restart points, in uncompressed bytes.
inline constexpr uint64_t kRestartSpacingBytes = 1 << 20;
// The deflate window a gzip restart point inside a member keeps.
inline constexpr uint32_t kDeflateWindowBytes = 32768;

// One place where decompression can begin. Trivially copyable, no padding:
// stored as-is in index caches.
struct RestartPoint {
  enum Kind : uint8_t { stream_start = 0, deflate_block = 1 };
  uint64_t compressed_offset = 0;    // first byte to decode (gzip block: bits of the byte before come first)
  uint64_t uncompressed_offset = 0;  // the output's offset there
  uint64_t window_offset = 0;        // deflate_block: the window's bytes in CompressedIndex::windows
  uint32_t window_stored_bytes = 0;  // deflate_block: its deflated size
  uint32_t window_bytes = 0;         // deflate_block: its size, at most kDeflateWindowBytes
  uint8_t kind = stream_start;
  uint8_t bits = 0;                  // deflate_block: unread bits of the byte before compressed_offset
  uint16_t reserved16 = 0;
  uint32_t reserved32 = 0;
};
static_assert(sizeof(RestartPoint) == 40);

// What reading a compressed file at any uncompressed offset needs.
struct CompressedIndex {
  Compression compression = Compression::none;
  uint64_t compressed_bytes = 0;
  uint64_t uncompressed_bytes = 0;
  uint64_t streams = 0;              // zstd frames (skippable ones too) or gzip members
  std::vector<RestartPoint> points;  // ascending in both offsets; points[0] is (0, 0)
  std::vector<unsigned char> windows;

  // The last point at or before uncompressed `offset`.
  const RestartPoint& point_before(uint64_t offset) const;
  uint64_t state_bytes() const;
};

// Called with the file's decompressed bytes in order, a piece at a time.
using DecompressedSink = std::function<void(std::span<const unsigned char>)>;

// Decompresses all of `bytes` (the file at `path`, mapped), passing the output
// to `sink`, and records restart points (gzip: at least `spacing_bytes` of
// output apart). Throws IoError naming `path` and the compressed offset where the data
// is corrupt, is not of `compression`, or ends inside a frame or member.
CompressedIndex index_compressed(const std::string& path, std::span<const unsigned char> bytes,
                                 Compression compression, uint64_t spacing_bytes, const DecompressedSink& sink);

// Reads uncompressed bytes [offset, offset + bytes) of the file `path` (the
// caller's number `file` for `reader`) into `out`, decompressing from the
// restart point before `offset`. Returns false with `error` set (the path, the
// compressed and uncompressed offsets, and why) when the file cannot be read,
// its data is corrupt or it ends early; never throws for I/O. Thread-safe
// as FileReader::read is: each call keeps its own decoder.
bool read_decompressed(FileReader& reader, size_t file, const std::string& path, const CompressedIndex& index,
                       uint64_t offset, void* out, size_t bytes, std::string& error);

// Writers (msd-datagen, the tests, msd-bench compressed). Throw IoError when
// the library fails.
//
// zstd frames of at least `frame_bytes` input each, cut after the first
// newline past that size so a record never spans two frames; each frame
// records its content size and a checksum, as the `zstd` tool's do.
std::string zstd_compress_frames(std::string_view data, size_t frame_bytes, int level);
// One gzip member (what `gzip` writes).
std::string gzip_compress(std::string_view data, int level);

}  // namespace msd
