#include "source/jsonl/compressed.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>

#include "common/error.h"

namespace msd {

namespace {

// zlib counts input and output in 32-bit unsigned ints.
constexpr size_t kZlibChunkBytes = size_t{1} << 30;
// Compressed bytes a random read fetches per pread.
constexpr size_t kReadChunkBytes = 64 << 10;
// Decompressed bytes a random read produces per decoder call.
constexpr size_t kDecodeChunkBytes = 64 << 10;

struct ZstdDCtxFree {
  void operator()(ZSTD_DCtx* context) const { ZSTD_freeDCtx(context); }
};
using ZstdDCtx = std::unique_ptr<ZSTD_DCtx, ZstdDCtxFree>;

struct ZstdCCtxFree {
  void operator()(ZSTD_CCtx* context) const { ZSTD_freeCCtx(context); }
};

ZstdDCtx make_zstd_dctx() {
  ZstdDCtx context(ZSTD_createDCtx());
  if (!context) throw IoError("cannot create a zstd decompression context (out of memory)");
  return context;
}

// A z_stream set up for inflate, ended with its owner. Move-free: zlib keeps
// a pointer to the stream in its state.
class Inflater {
 public:
  explicit Inflater(int window_bits) {
    if (inflateInit2(&stream, window_bits) != Z_OK) throw IoError("cannot set up zlib's inflate (out of memory)");
  }
  ~Inflater() { inflateEnd(&stream); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  z_stream stream{};
};

std::vector<unsigned char> deflate_window(std::span<const unsigned char> window) {
  uLongf stored = compressBound(static_cast<uLong>(window.size()));
  std::vector<unsigned char> out(stored);
  if (compress2(out.data(), &stored, window.data(), static_cast<uLong>(window.size()), 1) != Z_OK)
    throw IoError("zlib cannot deflate a restart point's window");
  out.resize(stored);
  return out;
}

// The last min(total, 32 KiB) bytes of output, in order, from zran.c's
// circular output buffer `ring` filled up to `fill`.
std::vector<unsigned char> last_window(const std::vector<unsigned char>& ring, size_t fill, uint64_t total) {
  std::vector<unsigned char> window;
  if (total >= ring.size()) window.insert(window.end(), ring.begin() + fill, ring.end());
  window.insert(window.end(), ring.begin(), ring.begin() + fill);
  return window;
}

void add_block_point(CompressedIndex& index, uint64_t here, uint64_t total, int bits,
                     const std::vector<unsigned char>& ring, size_t fill) {
  const std::vector<unsigned char> window = last_window(ring, fill, total);
  const std::vector<unsigned char> stored = deflate_window(window);
  RestartPoint point;
  point.kind = RestartPoint::deflate_block;
  point.compressed_offset = here;
  point.uncompressed_offset = total;
  point.bits = static_cast<uint8_t>(bits);
  point.window_offset = index.windows.size();
  point.window_stored_bytes = static_cast<uint32_t>(stored.size());
  point.window_bytes = static_cast<uint32_t>(window.size());
  index.windows.insert(index.windows.end(), stored.begin(), stored.end());
  index.points.push_back(point);
}

void add_stream_point(CompressedIndex& index, uint64_t here, uint64_t total) {
  RestartPoint point;
  point.compressed_offset = here;
  point.uncompressed_offset = total;
  index.points.push_back(point);
}

// Every frame start is a restart point: one costs 40 bytes of index, and a
// writer that chose small frames chose cheap random reads.
CompressedIndex index_zstd(const std::string& path, std::span<const unsigned char> bytes, const DecompressedSink& sink) {
  CompressedIndex index;
  index.compression = Compression::zstd;
  index.compressed_bytes = bytes.size();
  index.points.emplace_back();
  const ZstdDCtx context = make_zstd_dctx();
  std::vector<unsigned char> out(ZSTD_DStreamOutSize());
  ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
  uint64_t total = 0;
  size_t pending = 0;  // ZSTD_decompressStream's last result: 0 between frames
  bool frame_start = true;
  while (in.pos < in.size || pending != 0) {
    if (frame_start && in.pos > 0 && total > index.points.back().uncompressed_offset)
      add_stream_point(index, in.pos, total);
    ZSTD_outBuffer output{out.data(), out.size(), 0};
    pending = ZSTD_decompressStream(context.get(), &output, &in);
    if (ZSTD_isError(pending))
      throw IoError(str(path, ": corrupt zstd data: decoding failed at compressed offset ", in.pos,
                        " (uncompressed offset ", total, "): ", ZSTD_getErrorName(pending)));
    if (output.pos > 0) sink({out.data(), output.pos});
    total += output.pos;
    frame_start = pending == 0;
    if (frame_start) ++index.streams;
    if (in.pos == in.size && output.pos < output.size && pending != 0)
      throw IoError(str(path, ": the file ends inside a zstd frame, at compressed offset ", in.pos,
                        " (uncompressed offset ", total, "): truncated"));
  }
  index.uncompressed_bytes = total;
  return index;
}

CompressedIndex index_gzip(const std::string& path, std::span<const unsigned char> bytes, uint64_t spacing_bytes,
                           const DecompressedSink& sink) {
  CompressedIndex index;
  index.compression = Compression::gzip;
  index.compressed_bytes = bytes.size();
  index.points.emplace_back();
  Inflater inflater(31);  // gzip header and trailer
  z_stream& z = inflater.stream;
  std::vector<unsigned char> ring(kDeflateWindowBytes);
  uint64_t total = 0;
  size_t fed = 0;  // input bytes handed to zlib so far
  for (;;) {
    if (z.avail_in == 0) {
      const size_t chunk = std::min(bytes.size() - fed, kZlibChunkBytes);
      z.next_in = const_cast<unsigned char*>(bytes.data() + fed);
      z.avail_in = static_cast<uInt>(chunk);
      fed += chunk;
    }
    if (z.avail_out == 0) {
      z.next_out = ring.data();
      z.avail_out = static_cast<uInt>(ring.size());
    }
    unsigned char* before = z.next_out;
    const int rc = inflate(&z, Z_BLOCK);  // stops at each block's end, as zran.c
    const size_t produced = static_cast<size_t>(z.next_out - before);
    if (produced > 0) sink({before, produced});
    total += produced;
    const uint64_t here = fed - z.avail_in;
    if (rc == Z_STREAM_END) {
      ++index.streams;
      if (here == bytes.size()) break;
      inflateReset(&z);  // another member follows (`cat a.gz b.gz`, pigz, bgzip)
      if (total - index.points.back().uncompressed_offset >= spacing_bytes) add_stream_point(index, here, total);
      continue;
    }
    if (rc == Z_BUF_ERROR && here == bytes.size())
      throw IoError(str(path, ": the file ends inside a gzip member, at compressed offset ", here,
                        " (uncompressed offset ", total, "): truncated"));
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      throw IoError(str(path, ": corrupt gzip data: decoding failed at compressed offset ", here,
                        " (uncompressed offset ", total, "): ", z.msg != nullptr ? z.msg : zError(rc)));
    const bool block_end = (z.data_type & 128) != 0 && (z.data_type & 64) == 0;
    if (block_end && total - index.points.back().uncompressed_offset >= spacing_bytes)
      add_block_point(index, here, total, z.data_type & 7, ring, ring.size() - z.avail_out);
  }
  index.uncompressed_bytes = total;
  return index;
}

// Compressed bytes of one file from a start offset on, a chunk at a time.
class CompressedInput {
 public:
  CompressedInput(FileReader& reader, size_t file, const std::string& path, uint64_t offset, uint64_t end)
      : reader_(reader), file_(file), path_(path), next_(offset), end_(end) {}

  // Makes bytes available unless the file is at its end; false with `error`
  // set when the read fails.
  bool fill(std::string& error) {
    if (pos_ < size_ || next_ >= end_) return true;
    size_ = static_cast<size_t>(std::min<uint64_t>(kReadChunkBytes, end_ - next_));
    buffer_.resize(kReadChunkBytes);
    pos_ = 0;
    if (!reader_.read(file_, path_, next_, buffer_.data(), size_, error)) {
      size_ = 0;
      return false;
    }
    next_ += size_;
    return true;
  }
  const unsigned char* data() const { return buffer_.data() + pos_; }
  size_t available() const { return size_ - pos_; }
  void consume(size_t bytes) { pos_ += bytes; }
  uint64_t offset() const { return next_ - available(); }  // of data()
  bool at_end() const { return available() == 0 && next_ >= end_; }

 private:
  FileReader& reader_;
  size_t file_;
  const std::string& path_;
  uint64_t next_, end_;
  std::vector<unsigned char> buffer_;
  size_t pos_ = 0, size_ = 0;
};

// Decodes zstd frames from a frame start on. The context is the thread's own,
// kept between reads: a frame's window is allocated once, not per record.
class ZstdDecoder {
 public:
  bool start(const CompressedIndex&, const RestartPoint&, CompressedInput&, std::string&) {
    thread_local ZstdDCtx thread_context = make_zstd_dctx();
    context_ = thread_context.get();
    ZSTD_DCtx_reset(context_, ZSTD_reset_session_only);
    return true;
  }
  // The next piece of output (possibly empty); false with `error` set when
  // the data is corrupt or cannot be read.
  bool next(CompressedInput& input, std::span<const unsigned char>& produced, std::string& error) {
    produced = {};
    if (!input.fill(error)) return false;
    ZSTD_inBuffer in{input.data(), input.available(), 0};
    ZSTD_outBuffer out{out_, sizeof out_, 0};
    const size_t rc = ZSTD_decompressStream(context_, &out, &in);
    input.consume(in.pos);
    if (ZSTD_isError(rc)) {
      error = str("corrupt zstd data: decoding failed at compressed offset ", input.offset(), ": ", ZSTD_getErrorName(rc));
      return false;
    }
    produced = {out_, out.pos};
    return true;
  }

 private:
  ZSTD_DCtx* context_ = nullptr;
  unsigned char out_[kDecodeChunkBytes];
};

// Decodes gzip from a member's start or from a deflate block's end with its
// window, and on through the members that follow.
class GzipDecoder {
 public:
  GzipDecoder() : inflater_(31) {}
  bool start(const CompressedIndex& index, const RestartPoint& point, CompressedInput& input, std::string& error) {
    z_stream& z = inflater_.stream;
    if (point.kind == RestartPoint::stream_start) return inflateReset2(&z, 31) == Z_OK;
    raw_ = true;
    inflateReset2(&z, -15);
    if (point.bits > 0) {  // the block starts inside the byte before compressed_offset
      if (!input.fill(error)) return false;
      if (input.available() == 0) return fail(error, "the file ends before a restart point");
      inflatePrime(&z, point.bits, *input.data() >> (8 - point.bits));
      input.consume(1);
    }
    unsigned char window[kDeflateWindowBytes];
    uLongf window_bytes = sizeof window;
    if (point.window_offset + point.window_stored_bytes > index.windows.size() ||
        uncompress(window, &window_bytes, index.windows.data() + point.window_offset, point.window_stored_bytes) != Z_OK ||
        window_bytes != point.window_bytes)
      return fail(error, "a restart point's window in the index is damaged");
    return inflateSetDictionary(&z, window, point.window_bytes) == Z_OK ||
           fail(error, "zlib refused a restart point's window");
  }
  bool next(CompressedInput& input, std::span<const unsigned char>& produced, std::string& error) {
    produced = {};
    if (!input.fill(error)) return false;
    if (skip_ > 0) {  // a raw deflate stream ended: its member's 8-byte trailer
      const size_t skipped = std::min<size_t>(skip_, input.available());
      input.consume(skipped);
      skip_ -= skipped;
      return true;
    }
    if (input.available() == 0) return true;
    z_stream& z = inflater_.stream;
    const uInt given = static_cast<uInt>(std::min(input.available(), kZlibChunkBytes));
    z.next_in = const_cast<unsigned char*>(input.data());
    z.avail_in = given;
    z.next_out = out_;
    z.avail_out = sizeof out_;
    const int rc = inflate(&z, Z_NO_FLUSH);
    input.consume(given - z.avail_in);
    produced = {out_, sizeof out_ - z.avail_out};
    if (rc == Z_STREAM_END) {
      if (raw_) skip_ = 8;
      raw_ = false;
      inflateReset2(&z, 31);
      return true;
    }
    if (rc == Z_OK || rc == Z_BUF_ERROR) return true;
    error = str("corrupt gzip data: decoding failed at compressed offset ", input.offset(), ": ",
                z.msg != nullptr ? z.msg : zError(rc));
    return false;
  }

 private:
  static bool fail(std::string& error, const char* why) {
    error = why;
    return false;
  }
  Inflater inflater_;
  bool raw_ = false;
  uint32_t skip_ = 0;
  unsigned char out_[kDecodeChunkBytes];
};

template <typename Decoder>
bool read_with(FileReader& reader, size_t file, const std::string& path, const CompressedIndex& index,
               uint64_t offset, unsigned char* out, size_t bytes, std::string& error) {
  const RestartPoint& point = index.point_before(offset);
  const uint64_t start = point.compressed_offset - (point.kind == RestartPoint::deflate_block && point.bits > 0);
  CompressedInput input(reader, file, path, start, index.compressed_bytes);
  auto decoder = std::make_unique<Decoder>();  // its output buffer is too big for a thread's stack
  auto failed = [&](const std::string& why) {
    error = str(path, ": ", why, " (reading uncompressed offsets ", offset, " to ", offset + bytes,
                " from the restart point at compressed offset ", point.compressed_offset, ")");
    return false;
  };
  std::string why;
  if (!decoder->start(index, point, input, why)) return failed(why);
  uint64_t position = point.uncompressed_offset;  // of the next byte decoded
  const uint64_t end = offset + bytes;
  while (position < end) {
    std::span<const unsigned char> produced;
    if (!decoder->next(input, produced, why)) return failed(why);
    if (produced.empty() && input.at_end())
      return failed(str("the data ends at uncompressed offset ", position));
    const uint64_t low = std::max(position, offset), high = std::min(position + produced.size(), end);
    if (low < high) std::memcpy(out + (low - offset), produced.data() + (low - position), high - low);
    position += produced.size();
  }
  return true;
}

}  // namespace

const char* compression_name(Compression compression) {
  switch (compression) {
    case Compression::none: return "none";
    case Compression::gzip: return "gzip";
    case Compression::zstd: return "zstd";
  }
  return "unknown";
}

Compression compression_of_path(const std::string& path) {
  if (path.ends_with(".gz")) return Compression::gzip;
  if (path.ends_with(".zst")) return Compression::zstd;
  return Compression::none;
}

const RestartPoint& CompressedIndex::point_before(uint64_t offset) const {
  MSD_CHECK(!points.empty());
  auto it = std::upper_bound(points.begin(), points.end(), offset,
                             [](uint64_t value, const RestartPoint& point) { return value < point.uncompressed_offset; });
  return *(it - 1);
}

uint64_t CompressedIndex::state_bytes() const {
  return points.capacity() * sizeof(RestartPoint) + windows.capacity();
}

CompressedIndex index_compressed(const std::string& path, std::span<const unsigned char> bytes,
                                 Compression compression, uint64_t spacing_bytes, const DecompressedSink& sink) {
  switch (compression) {
    case Compression::zstd: return index_zstd(path, bytes, sink);
    case Compression::gzip: return index_gzip(path, bytes, spacing_bytes, sink);
    case Compression::none: break;
  }
  throw IoError(str(path, ": not a compressed file"));
}

bool read_decompressed(FileReader& reader, size_t file, const std::string& path, const CompressedIndex& index,
                       uint64_t offset, void* out, size_t bytes, std::string& error) {
  auto* target = static_cast<unsigned char*>(out);
  if (index.compression == Compression::zstd)
    return read_with<ZstdDecoder>(reader, file, path, index, offset, target, bytes, error);
  return read_with<GzipDecoder>(reader, file, path, index, offset, target, bytes, error);
}

std::string zstd_compress_frames(std::string_view data, size_t frame_bytes, int level) {
  std::unique_ptr<ZSTD_CCtx, ZstdCCtxFree> context(ZSTD_createCCtx());
  if (!context) throw IoError("cannot create a zstd compression context (out of memory)");
  ZSTD_CCtx_setParameter(context.get(), ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(context.get(), ZSTD_c_checksumFlag, 1);
  std::string out;
  size_t start = 0;
  do {
    size_t end = data.size();
    if (frame_bytes > 0 && data.size() - start > frame_bytes) {
      const size_t newline = data.find('\n', start + frame_bytes - 1);
      end = newline == std::string_view::npos ? data.size() : newline + 1;
    }
    const size_t at = out.size();
    out.resize(at + ZSTD_compressBound(end - start));
    const size_t written = ZSTD_compress2(context.get(), out.data() + at, out.size() - at, data.data() + start, end - start);
    if (ZSTD_isError(written)) throw IoError(str("zstd cannot compress: ", ZSTD_getErrorName(written)));
    out.resize(at + written);
    start = end;
  } while (start < data.size());
  return out;
}

std::string gzip_compress(std::string_view data, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw IoError("cannot set up zlib's deflate (out of memory)");
  std::string out;
  size_t fed = 0;
  int rc = Z_OK;
  std::vector<unsigned char> chunk(1 << 20);
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0 && fed < data.size()) {
      const size_t bytes = std::min(data.size() - fed, kZlibChunkBytes);
      z.next_in = reinterpret_cast<unsigned char*>(const_cast<char*>(data.data() + fed));
      z.avail_in = static_cast<uInt>(bytes);
      fed += bytes;
    }
    z.next_out = chunk.data();
    z.avail_out = static_cast<uInt>(chunk.size());
    rc = deflate(&z, fed == data.size() ? Z_FINISH : Z_NO_FLUSH);
    out.append(reinterpret_cast<const char*>(chunk.data()), chunk.size() - z.avail_out);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      deflateEnd(&z);
      throw IoError(str("zlib cannot compress: ", zError(rc)));
    }
  }
  deflateEnd(&z);
  return out;
}

}  // namespace msd
