// Checkpoint files: opaque snapshot bytes (what a store's snapshot hook streams out) with
// the seq they cover. Written to a temporary file, fsynced, renamed into place and the
// directory fsynced, so a checkpoint is either wholly present or absent after a crash.
//
// file := magic u32 | version u16 | header_len u16 | seq u64 | payload_len u64 |
//         payload masked crc32c u32 | header masked crc32c u32 (bytes [0, 28)) | payload
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/wal/file.h"
#include "rdmarepl/wal/reporter.h"

namespace rdmarepl::wal {

inline constexpr uint32_t kCheckpointMagic = 0x52434b50;  // "RCKP"
inline constexpr size_t kCheckpointHeaderSize = 32;

// Streams one checkpoint into `dir`. Not thread-safe. Destroying it before commit()
// removes the temporary file: an abandoned checkpoint leaves nothing behind.
class CheckpointWriter {
 public:
  static Result<CheckpointWriter> create(const std::string& dir, uint64_t seq);
  CheckpointWriter(CheckpointWriter&&) noexcept = default;
  CheckpointWriter& operator=(CheckpointWriter&&) noexcept;
  ~CheckpointWriter();

  Status append(std::span<const uint8_t> bytes);
  // Makes the checkpoint durable and visible under its final name.
  Status commit();

  [[nodiscard]] uint64_t seq() const noexcept { return seq_; }
  [[nodiscard]] const std::string& path() const noexcept { return final_path_; }

 private:
  CheckpointWriter() = default;
  void abandon() noexcept;

  std::string dir_;
  std::string final_path_;
  std::string tmp_path_;
  uint64_t seq_ = 0;
  File file_;
  std::vector<uint8_t> buf_;  // 1 MiB staging so a store may stream small pieces
  uint64_t payload_len_ = 0;
  uint64_t written_ = 0;  // file bytes already written
  uint32_t crc_ = 0;
  bool committed_ = false;
};

// Reads one checkpoint whose header and payload CRC were verified by open().
class CheckpointReader {
 public:
  // Verifies the whole file (one pass over the payload); Errc::corrupt when it fails.
  static Result<CheckpointReader> open(const std::string& path);

  // Copies up to out.size() payload bytes; returns 0 at the end.
  Result<size_t> read(std::span<uint8_t> out);
  Status rewind() {
    pos_ = 0;
    return ok_status();
  }

  [[nodiscard]] uint64_t seq() const noexcept { return seq_; }
  [[nodiscard]] uint64_t size() const noexcept { return payload_len_; }
  [[nodiscard]] const std::string& path() const noexcept { return file_.path(); }

 private:
  CheckpointReader() = default;
  File file_;
  uint64_t seq_ = 0;
  uint64_t payload_len_ = 0;
  uint64_t pos_ = 0;
};

// Seqs of the checkpoint files in `dir`, ascending.
Result<std::vector<uint64_t>> list_checkpoints(const std::string& dir);

// The newest checkpoint that verifies; corrupt newer ones are reported (bad_checkpoint)
// and skipped. nullopt when there is none.
Result<std::optional<CheckpointReader>> load_newest_checkpoint(const std::string& dir,
                                                               Reporter* reporter);

}  // namespace rdmarepl::wal
