// WebDataset shards: tar files whose members are grouped into samples by key,
// the member path up to the first '.' of its basename (WebDataset's rule);
// consecutive members with the same key form one sample. The image is the
// .jpg/.jpeg member, the caption the .txt member (whole file) or the .json
// member (string field `caption_field`, else "text"); extensions compare
// case-insensitively and other members are ignored. Each shard's sample index
// is built on first open (the shard mapped for the scan only) and cached
// (source/index_cache.h); a sample's members are read with pread (FileReader).
#pragma once

#include <string>
#include <vector>

#include "common/storage.h"
#include "source/index_cache.h"
#include "source/source.h"

namespace msd {

struct WdsOptions {
  std::string caption_field = "caption";  // string field of a .json caption
  std::string cache_dir;                  // see index_cache_path(); empty: beside the data
};

// Reads image-text samples from the shards `files` in the given order. Throws
// IoError when a shard cannot be opened. A header with a bad checksum ends the
// scan of its shard (a warning gives the offset; the rest is ignored). Bad
// samples: a member cut short by the end of the shard is truncated_member, a
// sample without image or caption missing_member, a .json caption that is not
// JSON invalid_json or lacks the field missing_field, a caption that is not
// UTF-8 invalid_utf8, a member the shard no longer holds (it shrank after
// indexing) or that cannot be read read_error. length_hint() is the image plus
// caption bytes.
class WdsSource final : public Source {
 public:
  WdsSource(std::vector<std::string> files, const WdsOptions& options);

  SampleKind kind() const override { return SampleKind::image_text; }
  uint64_t size() const override { return offsets_.total(); }
  uint64_t length_hint(uint64_t index) const override;
  void read(uint64_t index, RawSample& out) override;
  SampleLocation locate(uint64_t index) const override;
  std::vector<uint64_t> file_samples() const override { return offsets_.samples_per_file(); }
  uint64_t state_bytes() const override;

  size_t file_count() const { return shards_.size(); }
  IndexCounts index_counts() const override { return index_counts_; }

  static constexpr uint32_t cache_tag = 0x5344574d;  // "MWDS"
  static constexpr uint32_t cache_version = 1;

  // One sample of a shard's index (stored as is in the cache).
  struct Entry {
    static constexpr uint8_t has_image = 1, caption_txt = 2, caption_json = 4, truncated = 8;
    uint64_t first_header = 0;  // offset of the sample's first member header
    uint64_t image_offset = 0, image_bytes = 0;
    uint64_t caption_offset = 0, caption_bytes = 0;
    uint8_t flags = 0;
    uint8_t reserved[7] = {};
  };

  // How the scan of a shard ended, when not at the end of the archive.
  struct ScanEnd {
    uint8_t stop = 0;        // TarScanner::Stop
    uint8_t reserved[7] = {};
    uint64_t offset = 0;        // where the scan stopped
    uint64_t member_bytes = 0;  // declared size of a truncated member
  };

 private:
  struct Shard {
    std::string path;
    uint64_t size_bytes = 0;  // at open
    std::vector<Entry> entries;
    ScanEnd scan_end;
  };

  void index_shard(Shard& shard, const FileStamp& stamp, const std::string& cache_dir);

  std::vector<Shard> shards_;
  FileReader reader_;
  FileOffsets offsets_;
  std::string caption_field_;
  IndexCounts index_counts_;
};

}  // namespace msd
