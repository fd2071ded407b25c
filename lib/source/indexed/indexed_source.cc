#include "source/indexed/indexed_source.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "common/error.h"
#include "common/files.h"
#include "common/log.h"

namespace msd {

namespace {

constexpr unsigned char idx_magic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
constexpr uint64_t idx_version = 1;
constexpr size_t header_bytes = 9 + 8 + 1 + 8 + 8;

template <typename T>
T load(const unsigned char* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

// Reads one token of `code` at `p` as int64.
int64_t load_token(const unsigned char* p, uint8_t code) {
  switch (static_cast<IndexedDtype>(code)) {
    case IndexedDtype::uint8: return *p;
    case IndexedDtype::int8: return static_cast<int8_t>(*p);
    case IndexedDtype::int16: return load<int16_t>(p);
    case IndexedDtype::uint16: return load<uint16_t>(p);
    case IndexedDtype::int32: return load<int32_t>(p);
    case IndexedDtype::int64: return load<int64_t>(p);
    default: MSD_CHECK(false && "not an integer dtype");
  }
  return 0;
}

void store_token(unsigned char* p, IndexedDtype dtype, int32_t token) {
  switch (dtype) {
    case IndexedDtype::uint8: *p = checked_cast<uint8_t>(token); return;
    case IndexedDtype::int8: *p = static_cast<unsigned char>(checked_cast<int8_t>(token)); return;
    case IndexedDtype::int16: {
      int16_t v = checked_cast<int16_t>(token);
      std::memcpy(p, &v, sizeof v);
      return;
    }
    case IndexedDtype::uint16: {
      uint16_t v = checked_cast<uint16_t>(token);
      std::memcpy(p, &v, sizeof v);
      return;
    }
    case IndexedDtype::int32: std::memcpy(p, &token, sizeof token); return;
    case IndexedDtype::int64: {
      int64_t v = token;
      std::memcpy(p, &v, sizeof v);
      return;
    }
    default: MSD_CHECK(false && "not an integer dtype");
  }
}

}  // namespace

size_t indexed_dtype_bytes(uint8_t code) {
  switch (static_cast<IndexedDtype>(code)) {
    case IndexedDtype::uint8:
    case IndexedDtype::int8: return 1;
    case IndexedDtype::int16:
    case IndexedDtype::uint16: return 2;
    case IndexedDtype::int32: return 4;
    case IndexedDtype::int64: return 8;
    default: return 0;
  }
}

const char* indexed_dtype_name(uint8_t code) {
  switch (static_cast<IndexedDtype>(code)) {
    case IndexedDtype::uint8: return "uint8";
    case IndexedDtype::int8: return "int8";
    case IndexedDtype::int16: return "int16";
    case IndexedDtype::int32: return "int32";
    case IndexedDtype::int64: return "int64";
    case IndexedDtype::float64: return "float64";
    case IndexedDtype::float32: return "float32";
    case IndexedDtype::uint16: return "uint16";
  }
  return "unknown";
}

std::string indexed_bin_path(const std::string& idx_path) {
  size_t slash = idx_path.rfind('/');
  size_t dot = idx_path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return idx_path + ".bin";
  return idx_path.substr(0, dot) + ".bin";
}

std::string indexed_idx_patterns(const std::string& patterns) {
  std::string out;
  for (std::string pattern : split_patterns(patterns)) {
    const bool is_idx = pattern.size() >= 4 && pattern.compare(pattern.size() - 4, 4, ".idx") == 0;
    if (!is_idx) {
      const std::string idx = pattern + ".idx";
      if (!default_storage().glob(idx).empty()) pattern = idx;
    }
    out += (out.empty() ? "" : ",") + pattern;
  }
  return out;
}

IndexedSource::IndexedSource(std::vector<std::string> idx_files) {
  pairs_.reserve(idx_files.size());
  for (auto& idx_path : idx_files) {
    Pair& pair = pairs_.emplace_back();
    pair.idx_path = std::move(idx_path);
    pair.bin_path = indexed_bin_path(pair.idx_path);
    pair.idx = MappedFile(pair.idx_path);
    if (pair.idx.size() == 0) {
      warn_empty_file(pair.idx_path);
      offsets_.add_file(0);
      continue;
    }
    if (!file_exists(pair.bin_path))
      throw IoError(str(pair.idx_path, ": its data file ", pair.bin_path, " does not exist"));
    pair.bin_bytes = file_stamp(pair.bin_path).size_bytes;
    std::string both = str(pair.idx_path, " and ", pair.bin_path);
    auto idx = pair.idx.bytes();
    if (idx.size() < header_bytes || std::memcmp(idx.data(), idx_magic, sizeof idx_magic) != 0)
      throw IoError(str(pair.idx_path, " is not a Megatron MMIDIDX index (bad magic or shorter than its header)"));
    uint64_t version = load<uint64_t>(idx.data() + 9);
    if (version != idx_version)
      throw IoError(str(pair.idx_path, ": MMIDIDX version ", version, " is not supported (only 1)"));
    pair.dtype = idx[17];
    pair.token_bytes = indexed_dtype_bytes(pair.dtype);
    if (pair.token_bytes == 0)
      throw IoError(str(pair.idx_path, ": dtype code ", +pair.dtype, " (", indexed_dtype_name(pair.dtype),
                        ") is not an integer token type"));
    pair.sequences = load<uint64_t>(idx.data() + 18);
    pair.documents = load<uint64_t>(idx.data() + 26);
    // Counts come from the file: bound them before multiplying.
    uint64_t room = idx.size() - header_bytes;
    if (pair.sequences > room / 12 || pair.documents > room / 8 ||
        header_bytes + pair.sequences * 12 + pair.documents * 8 != idx.size())
      throw IoError(str(both, " do not match: the index declares ", pair.sequences, " sequences and ",
                        pair.documents, " documents, which need ",
                        pair.sequences <= room / 12 && pair.documents <= room / 8
                            ? str(header_bytes + pair.sequences * 12 + pair.documents * 8, " bytes")
                            : std::string("more bytes"),
                        ", but the .idx has ", idx.size()));
    const uint64_t bin_bytes = pair.bin_bytes;
    for (uint64_t s = 0; s < pair.sequences; ++s) {
      int64_t tokens = sequence_tokens(pair, s);
      int64_t pointer = sequence_pointer(pair, s);
      bool fits = tokens >= 0 && pointer >= 0 && static_cast<uint64_t>(pointer) <= bin_bytes &&
                  static_cast<uint64_t>(tokens) <= (bin_bytes - static_cast<uint64_t>(pointer)) / pair.token_bytes;
      if (!fits)
        throw IoError(str(both, " do not match: sequence ", s, " (", tokens, " tokens of ", pair.token_bytes,
                          " bytes at offset ", pointer, ") does not lie inside the .bin (", bin_bytes, " bytes)"));
    }
    offsets_.add_file(pair.sequences);
  }
}

int32_t IndexedSource::sequence_tokens(const Pair& pair, uint64_t sequence) const {
  return load<int32_t>(pair.idx.bytes().data() + header_bytes + sequence * 4);
}

int64_t IndexedSource::sequence_pointer(const Pair& pair, uint64_t sequence) const {
  return load<int64_t>(pair.idx.bytes().data() + header_bytes + pair.sequences * 4 + sequence * 8);
}

uint64_t IndexedSource::document_count(size_t file) const {
  return pairs_[file].documents == 0 ? 0 : pairs_[file].documents - 1;
}

uint64_t IndexedSource::length_hint(uint64_t index) const {
  auto [file, local] = offsets_.find(index);
  return static_cast<uint64_t>(sequence_tokens(pairs_[file], local));
}

SampleLocation IndexedSource::locate(uint64_t index) const {
  auto [file, local] = offsets_.find(index);
  return {pairs_[file].bin_path, static_cast<uint64_t>(sequence_pointer(pairs_[file], local))};
}

void IndexedSource::read(uint64_t index, RawSample& out) {
  out.clear();
  out.kind = SampleKind::tokens;
  auto [file, local] = offsets_.find(index);
  const Pair& pair = pairs_[file];
  auto tokens = static_cast<uint64_t>(sequence_tokens(pair, local));
  auto pointer = static_cast<uint64_t>(sequence_pointer(pair, local));
  out.where = {pair.bin_path, pointer};
  out.tokens.resize(tokens);
  // int32 ids go straight into the sample; other dtypes through a buffer
  // freed after the read (no source keeps one the size of its longest).
  const bool int32 = pair.dtype == static_cast<uint8_t>(IndexedDtype::int32);
  std::vector<unsigned char> stored(int32 ? 0 : tokens * pair.token_bytes);
  unsigned char* bytes = int32 ? reinterpret_cast<unsigned char*>(out.tokens.data()) : stored.data();
  std::string error;
  if (tokens > 0 && !bins_.read(file, pair.bin_path, pointer, bytes, tokens * pair.token_bytes, error)) {
    out.tokens.clear();
    out.bad = BadKind::read_error;
    out.reason = str(error, " (sequence ", local, ": ", tokens, " tokens; a .bin that shrank after opening ends early)");
    return;
  }
  if (int32) return;
  for (uint64_t i = 0; i < tokens; ++i) {
    int64_t token = load_token(bytes + i * pair.token_bytes, pair.dtype);
    if (token < std::numeric_limits<int32_t>::min() || token > std::numeric_limits<int32_t>::max()) {
      out.tokens.clear();
      out.bad = BadKind::read_error;
      out.reason = str("token ", i, " of sequence ", local, " in ", pair.bin_path, " is ", token,
                       ", outside the int32 range of token ids");
      return;
    }
    out.tokens[i] = static_cast<int32_t>(token);
  }
}

uint64_t IndexedSource::state_bytes() const {
  uint64_t bytes = sizeof(*this) + offsets_.state_bytes();
  for (const auto& pair : pairs_)
    bytes += sizeof(Pair) + pair.idx_path.capacity() + pair.bin_path.capacity() + pair.idx.size();
  return bytes;
}

IndexedDatasetWriter::IndexedDatasetWriter(const std::string& prefix, IndexedDtype dtype)
    : bin_path_(prefix + ".bin"),
      idx_path_(prefix + ".idx"),
      bin_temp_(str(prefix, ".bin.tmp.", ::getpid())),
      dtype_(dtype),
      token_bytes_(indexed_dtype_bytes(static_cast<uint8_t>(dtype))) {
  if (token_bytes_ == 0)
    throw Error(str("indexed dataset ", prefix, ": dtype ", indexed_dtype_name(static_cast<uint8_t>(dtype)),
                    " is not an integer token type"));
  bin_ = std::fopen(bin_temp_.c_str(), "wb");
  if (bin_ == nullptr) throw IoError(str("cannot create ", bin_temp_, ": ", std::strerror(errno)));
}

IndexedDatasetWriter::~IndexedDatasetWriter() {
  if (bin_ != nullptr) {
    std::fclose(bin_);
    ::unlink(bin_temp_.c_str());
  }
}

void IndexedDatasetWriter::add_document(std::span<const int32_t> tokens) {
  MSD_CHECK(bin_ != nullptr);
  scratch_.resize(tokens.size() * token_bytes_);
  for (size_t i = 0; i < tokens.size(); ++i) {
    try {
      store_token(scratch_.data() + i * token_bytes_, dtype_, tokens[i]);
    } catch (const Error&) {
      throw Error(str("token ", tokens[i], " (document ", sizes_.size(), ", position ", i, ") does not fit dtype ",
                      indexed_dtype_name(static_cast<uint8_t>(dtype_)), " of ", bin_path_));
    }
  }
  if (!scratch_.empty() && std::fwrite(scratch_.data(), 1, scratch_.size(), bin_) != scratch_.size())
    throw IoError(str("cannot write ", bin_temp_, ": ", std::strerror(errno)));
  sizes_.push_back(checked_cast<int32_t>(tokens.size()));
  pointers_.push_back(bin_bytes_);
  bin_bytes_ += static_cast<int64_t>(scratch_.size());
}

void IndexedDatasetWriter::finish() {
  MSD_CHECK(bin_ != nullptr);
  bool ok = std::fflush(bin_) == 0;
  ok = std::fclose(bin_) == 0 && ok;
  bin_ = nullptr;
  if (!ok) {
    ::unlink(bin_temp_.c_str());
    throw IoError(str("cannot write ", bin_temp_, ": ", std::strerror(errno)));
  }
  std::vector<unsigned char> idx;
  auto put = [&idx](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    idx.insert(idx.end(), p, p + bytes);
  };
  uint64_t sequences = sizes_.size();
  uint64_t documents = sequences + 1;
  uint8_t code = static_cast<uint8_t>(dtype_);
  put(idx_magic, sizeof idx_magic);
  put(&idx_version, sizeof idx_version);
  put(&code, 1);
  put(&sequences, sizeof sequences);
  put(&documents, sizeof documents);
  put(sizes_.data(), sizes_.size() * sizeof(int32_t));
  put(pointers_.data(), pointers_.size() * sizeof(int64_t));
  for (uint64_t d = 0; d < documents; ++d) {
    int64_t first = static_cast<int64_t>(d);
    put(&first, sizeof first);
  }
  // The .bin first: an .idx never points into a .bin that is not there yet.
  if (std::rename(bin_temp_.c_str(), bin_path_.c_str()) != 0) {
    int err = errno;
    ::unlink(bin_temp_.c_str());
    throw IoError(str("cannot rename ", bin_temp_, " to ", bin_path_, ": ", std::strerror(err)));
  }
  write_file_atomic(idx_path_, idx);
}

void write_indexed_dataset(const std::string& prefix, std::span<const std::vector<int32_t>> documents,
                           IndexedDtype dtype) {
  IndexedDatasetWriter writer(prefix, dtype);
  for (const auto& document : documents) writer.add_document(document);
  writer.finish();
}

}  // namespace msd
