// A Storage that passes every call to another and injects the failures a
// real file system has: reads that fail (EIO) or find the file cut short in
// a byte range of one file or of all, writes that find the disk full
// (ENOSPC), and a delay before every read. The unit tests use it to drive
// the readers, the index caches and the checkpoints into their error paths;
// a loader named by `fault.kind = fail` reads through one
// (loader/fault_injection.h). Faults can be changed while other threads
// read: every call is thread-safe.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "common/storage.h"

namespace msd {

class FaultyStorage final : public Storage {
 public:
  // Reads of bytes [begin, end) of `path` (every file when empty) fail.
  struct ReadFault {
    enum class Kind {
      error,     // read_at and map throw IoError with `error_number`'s message
      truncated  // the file seems to end at `begin`: reads past it come back short
    };
    std::string path;
    uint64_t begin = 0;
    uint64_t end = std::numeric_limits<uint64_t>::max();
    Kind kind = Kind::error;
    int error_number = EIO;
  };

  // `base` outlives this storage.
  explicit FaultyStorage(Storage& base) : base_(base) {}

  void fail_reads(ReadFault fault);
  // write_atomic of `path` (every file when empty) throws IoError with
  // `error_number`'s message and writes nothing.
  void fail_writes(std::string path = {}, int error_number = ENOSPC);
  // Sleeps `delay` before every read_at.
  void delay_reads(std::chrono::microseconds delay);
  // No fault from now on.
  void clear();
  // read_at calls answered (failed ones included).
  uint64_t reads() const;

  std::unique_ptr<ReadableFile> open(const std::string& path) override;
  MappedFile map(const std::string& path) override;
  std::optional<FileStamp> stat(const std::string& path) override { return base_.stat(path); }
  std::vector<std::string> glob(const std::string& pattern) override { return base_.glob(pattern); }
  std::vector<std::string> list(const std::string& dir) override { return base_.list(dir); }
  void write_atomic(const std::string& path, std::span<const unsigned char> bytes) override;
  bool create_exclusive(const std::string& path, std::span<const unsigned char> bytes) override {
    return base_.create_exclusive(path, bytes);
  }
  void rename(const std::string& from, const std::string& to) override { base_.rename(from, to); }
  void sync(const std::string& path) override { base_.sync(path); }
  bool remove(const std::string& path) override { return base_.remove(path); }
  void make_dirs(const std::string& dir) override { base_.make_dirs(dir); }
  bool can_write(const std::string& dir) override { return base_.can_write(dir); }

 private:
  class File;
  // How a read of [offset, offset + bytes) of `path` goes: how many of its
  // bytes may be read (`bytes` when no fault applies); throws IoError for an
  // error fault. Counts the read and sleeps the delay.
  size_t admit_read(const std::string& path, uint64_t offset, size_t bytes);

  Storage& base_;
  mutable std::mutex mutex_;  // guards what follows
  std::vector<ReadFault> read_faults_;
  std::vector<std::pair<std::string, int>> write_faults_;
  std::chrono::microseconds delay_{0};
  uint64_t reads_ = 0;
};

}  // namespace msd
