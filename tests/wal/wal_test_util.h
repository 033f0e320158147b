// Helpers for the WAL tests, in the manner of leveldb's log_test.cc: a temporary directory,
// an in-memory segment builder, and helpers that damage files on purpose (flip a byte,
// shrink a file, re-fix a frame checksum so that a later check is the one that fires).
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/wal/format.h"
#include "rdmarepl/wal/layout.h"
#include "rdmarepl/wal/reader.h"
#include "rdmarepl/wal/reporter.h"

namespace rdmarepl::wal::test {

// A fresh directory from mkdtemp, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "rdmarepl-wal-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] std::string file(const std::string& name) const { return path_ + "/" + name; }
  [[nodiscard]] std::string segment(uint64_t n) const { return file(segment_file_name(n)); }

 private:
  std::string path_;
};

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}
inline uint64_t file_size(const std::string& path) {
  return std::filesystem::file_size(path);
}

// Copies every file of `from` into `to` (which holds none of those names yet). Copying a
// log's directory while its writer is open gives the files as a crash of the process would
// leave them once the page cache reached the disk.
inline void copy_files(const TempDir& from, const TempDir& to) {
  for (const auto& e : std::filesystem::directory_iterator(from.path()))
    std::filesystem::copy_file(e.path(), to.file(e.path().filename().string()));
}

// XORs the byte at `offset` with `mask` (non-zero), in place. (Rewriting the file through
// O_TRUNC would make ext4 flush it on close, which costs a disk write per call.)
inline void flip_byte(const std::string& path, uint64_t offset, uint8_t mask = 0x01) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  if (!f.get(c)) throw std::runtime_error("flip_byte: offset past end of " + path);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ static_cast<char>(mask)));
}
// Cuts the file down to `size` bytes.
inline void shrink_file(const std::string& path, uint64_t size) {
  std::filesystem::resize_file(path, size);
}
// Recomputes the CRC of the frame at `offset`, so that damage to its fields passes the
// checksum and a later check has to catch it.
inline void fix_frame_checksum(std::vector<uint8_t>& seg, uint64_t offset) {
  const uint32_t len = load_be32(seg.data() + offset + 4);
  store_be32(seg.data() + offset,
             crc32c::mask(crc32c::value(seg.data() + offset + 4, kFrameHeaderSize - 4 + len)));
}
inline void fix_frame_checksum(const std::string& path, uint64_t offset) {
  auto b = read_file(path);
  fix_frame_checksum(b, offset);
  write_file(path, b);
}

// Builds segment bytes in memory, frame by frame (the reader's in-memory fake file).
class SegmentBuilder {
 public:
  explicit SegmentBuilder(uint64_t number, uint64_t first_seq = 0) {
    bytes_.resize(kSegmentHeaderSize);
    SegmentHeader{number, first_seq}.encode(bytes_.data());
  }
  // Returns the frame's offset.
  uint64_t add(std::span<const uint8_t> payload, uint64_t first_seq, uint64_t last_seq,
               uint32_t count = 1, FrameType type = FrameType::batch) {
    const uint64_t off = bytes_.size();
    bytes_.resize(off + kFrameHeaderSize + payload.size());
    std::copy(payload.begin(), payload.end(),
              bytes_.begin() + static_cast<ptrdiff_t>(off + kFrameHeaderSize));
    FrameHeader h;
    h.length = static_cast<uint32_t>(payload.size());
    h.type = type;
    h.record_count = count;
    h.first_seq = first_seq;
    h.last_seq = last_seq;
    h.encode(bytes_.data() + off, bytes_.data() + off + kFrameHeaderSize);
    return off;
  }
  uint64_t add(const std::string& payload, uint64_t first_seq, uint64_t last_seq) {
    return add(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(payload.data()), payload.size()),
        first_seq, last_seq);
  }
  uint64_t seal() { return add(std::span<const uint8_t>(), 0, 0, 0, FrameType::end); }
  void pad_zeros(size_t n) { bytes_.resize(bytes_.size() + n, 0); }
  std::vector<uint8_t>& bytes() { return bytes_; }
  void write_to(const std::string& path) const { write_file(path, bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

struct OwnedDamage {
  std::string file;
  uint64_t segment;
  uint64_t offset;
  uint64_t bytes_dropped;
  DamageReason reason;
  bool at_tail;
};

class CollectingReporter final : public Reporter {
 public:
  void report(const Damage& d) override {
    damages.push_back(
        {std::string(d.file), d.segment, d.offset, d.bytes_dropped, d.reason, d.at_tail});
  }
  std::vector<OwnedDamage> damages;
};

struct OwnedFrame {
  uint64_t segment;
  uint64_t offset;
  uint64_t first_seq;
  uint64_t last_seq;
  uint32_t record_count;
  std::vector<uint8_t> payload;
  bool operator==(const OwnedFrame&) const = default;
};

inline OwnedFrame own(const Frame& f) {
  return {f.segment,  f.offset,       f.first_seq,
          f.last_seq, f.record_count, std::vector<uint8_t>(f.payload.begin(), f.payload.end())};
}

// Every valid frame of `dir`, and where reading stopped.
inline std::vector<OwnedFrame> read_all(const std::string& dir, Reporter* reporter,
                                        ReadEnd* end = nullptr) {
  auto r = LogReader::open(dir, reporter);
  if (!r) throw std::runtime_error(r.error().to_string());
  std::vector<OwnedFrame> out;
  Frame f;
  for (;;) {
    auto more = r->next(&f);
    if (!more) throw std::runtime_error(more.error().to_string());
    if (!*more) break;
    out.push_back(own(f));
  }
  if (end != nullptr) *end = r->end();
  return out;
}

inline std::vector<uint8_t> bytes_of(const std::string& s) {
  return {s.begin(), s.end()};
}

// A replication batch (docs/wire_format.md, "Replication batches": what the product frames
// in its log) of `n` puts with seqs first..first+n-1, timestamps 1000 + seq and
// `value_size`-byte values, encoded by the product's BatchBuilder.
class TestBatch {
 public:
  TestBatch(uint64_t first, uint32_t n, size_t value_size, uint16_t shard = 0)
      : first_(first), count_(n) {
    std::vector<std::string> keys;
    size_t total = replication::kBatchHeaderSize;
    for (uint32_t i = 0; i < n; ++i) {
      keys.push_back("key-" + std::to_string(first + i));
      total += replication::record_size(keys.back().size(), value_size);
    }
    bytes_.resize(replication::align_batch(total));
    replication::BatchBuilder b;
    b.start(reinterpret_cast<std::byte*>(bytes_.data()), bytes_.size(), shard, first);
    for (uint32_t i = 0; i < n; ++i) {
      const std::string value(value_size, static_cast<char>('a' + (first + i) % 26));
      b.add(replication::Op::put, keys[i], value, 1000 + first + i);
    }
    if (b.seal() != bytes_.size()) throw std::logic_error("TestBatch: size mismatch");
  }
  [[nodiscard]] std::span<const uint8_t> bytes() const noexcept { return bytes_; }
  [[nodiscard]] uint32_t count() const noexcept { return count_; }
  [[nodiscard]] uint64_t first_seq() const noexcept { return first_; }
  [[nodiscard]] uint64_t last_seq() const noexcept { return first_ + count_ - 1; }

 private:
  std::vector<uint8_t> bytes_;
  uint64_t first_;
  uint32_t count_;
};

inline TestBatch make_batch(uint64_t first, uint32_t n, size_t value_size = 10) {
  return TestBatch(first, n, value_size);
}

// The replication batch a WAL frame's payload holds; BatchError::ok only when it parses.
inline replication::BatchError parse_payload(std::span<const uint8_t> payload,
                                             replication::BatchView& out) {
  return replication::parse_batch(
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(payload.data()),
                                 payload.size()),
      out);
}

}  // namespace rdmarepl::wal::test
