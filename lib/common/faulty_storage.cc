#include "common/faulty_storage.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "common/error.h"

namespace msd {

namespace {

bool names(const std::string& pattern, const std::string& path) { return pattern.empty() || pattern == path; }

}  // namespace

class FaultyStorage::File final : public ReadableFile {
 public:
  File(FaultyStorage& owner, std::unique_ptr<ReadableFile> base)
      : ReadableFile(base->path()), owner_(owner), base_(std::move(base)) {}

  uint64_t size() const override { return base_->size(); }

  size_t read_at(uint64_t offset, void* out, size_t bytes) const override {
    const size_t allowed = owner_.admit_read(path(), offset, bytes);
    return allowed == 0 ? 0 : base_->read_at(offset, out, allowed);
  }

 private:
  FaultyStorage& owner_;
  std::unique_ptr<ReadableFile> base_;
};

void FaultyStorage::fail_reads(ReadFault fault) {
  const std::lock_guard lock(mutex_);
  read_faults_.push_back(std::move(fault));
}

void FaultyStorage::fail_writes(std::string path, int error_number) {
  const std::lock_guard lock(mutex_);
  write_faults_.emplace_back(std::move(path), error_number);
}

void FaultyStorage::delay_reads(std::chrono::microseconds delay) {
  const std::lock_guard lock(mutex_);
  delay_ = delay;
}

void FaultyStorage::clear() {
  const std::lock_guard lock(mutex_);
  read_faults_.clear();
  write_faults_.clear();
  delay_ = std::chrono::microseconds{0};
}

uint64_t FaultyStorage::reads() const {
  const std::lock_guard lock(mutex_);
  return reads_;
}

size_t FaultyStorage::admit_read(const std::string& path, uint64_t offset, size_t bytes) {
  std::chrono::microseconds delay{0};
  size_t allowed = bytes;
  {
    const std::lock_guard lock(mutex_);
    ++reads_;
    delay = delay_;
    for (const ReadFault& fault : read_faults_) {
      if (!names(fault.path, path) || offset >= fault.end || offset + bytes <= fault.begin) continue;
      if (fault.kind == ReadFault::Kind::error)
        throw IoError(str("cannot read ", bytes, " bytes at offset ", offset, " of ", path, ": ",
                          std::strerror(fault.error_number), " (injected)"));
      allowed = std::min<size_t>(allowed, offset >= fault.begin ? 0 : fault.begin - offset);
    }
  }
  if (delay.count() > 0) std::this_thread::sleep_for(delay);
  return allowed;
}

std::unique_ptr<ReadableFile> FaultyStorage::open(const std::string& path) {
  return std::make_unique<File>(*this, base_.open(path));
}

// A map is one read of the whole file, so a fault anywhere in it fails the map.
MappedFile FaultyStorage::map(const std::string& path) {
  MappedFile mapped = base_.map(path);
  if (mapped.size() > 0 && admit_read(path, 0, mapped.size()) < mapped.size())
    throw IoError(str("cannot map ", path, ": the file ends early (injected)"));
  return mapped;
}

void FaultyStorage::write_atomic(const std::string& path, std::span<const unsigned char> bytes) {
  {
    const std::lock_guard lock(mutex_);
    for (const auto& [pattern, error_number] : write_faults_)
      if (names(pattern, path))
        throw IoError(str("cannot write ", bytes.size(), " bytes to ", path, ": ", std::strerror(error_number),
                          " (injected)"));
  }
  base_.write_atomic(path, bytes);
}

}  // namespace msd
