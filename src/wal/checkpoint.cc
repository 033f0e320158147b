#include "rdmarepl/wal/checkpoint.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/crc32c.h"
#include "rdmarepl/core/log.h"
#include "rdmarepl/wal/format.h"
#include "rdmarepl/wal/layout.h"

namespace rdmarepl::wal {

namespace {
constexpr size_t kStaging = 1u << 20;

void encode_header(uint8_t* out, uint64_t seq, uint64_t len, uint32_t payload_crc) {
  store_be32(out, kCheckpointMagic);
  store_be16(out + 4, kFormatVersion);
  store_be16(out + 6, kCheckpointHeaderSize);
  store_be64(out + 8, seq);
  store_be64(out + 16, len);
  store_be32(out + 24, crc32c::mask(payload_crc));
  store_be32(out + 28, crc32c::mask(crc32c::value(out, 28)));
}
}  // namespace

Result<CheckpointWriter> CheckpointWriter::create(const std::string& dir, uint64_t seq) {
  CheckpointWriter w;
  w.dir_ = dir;
  w.seq_ = seq;
  w.final_path_ = join_path(dir, checkpoint_file_name(seq));
  w.tmp_path_ = w.final_path_ + ".tmp";
  auto f = File::open(w.tmp_path_, O_RDWR | O_CREAT | O_TRUNC);
  if (!f) return std::move(f).error();
  w.file_ = std::move(*f);
  w.buf_.reserve(kStaging);
  w.buf_.resize(kCheckpointHeaderSize);  // placeholder, rewritten by commit()
  return w;
}

CheckpointWriter& CheckpointWriter::operator=(CheckpointWriter&& o) noexcept {
  if (this != &o) {
    abandon();
    dir_ = std::move(o.dir_);
    final_path_ = std::move(o.final_path_);
    tmp_path_ = std::move(o.tmp_path_);
    seq_ = o.seq_;
    file_ = std::move(o.file_);
    buf_ = std::move(o.buf_);
    payload_len_ = o.payload_len_;
    written_ = o.written_;
    crc_ = o.crc_;
    committed_ = o.committed_;
  }
  return *this;
}

CheckpointWriter::~CheckpointWriter() {
  abandon();
}

void CheckpointWriter::abandon() noexcept {
  if (file_.is_open() && !committed_) {
    (void)file_.close();
    (void)remove_file(tmp_path_);
  }
}

Status CheckpointWriter::append(std::span<const uint8_t> bytes) {
  if (!file_.is_open() || committed_)
    return Error(Errc::closed, fmt::format("checkpoint {} is already committed", final_path_));
  crc_ = crc32c::extend(crc_, bytes.data(), bytes.size());
  // buf_ holds the file's bytes from offset written_ on.
  while (!bytes.empty()) {
    const size_t take = std::min(bytes.size(), kStaging - std::min(kStaging, buf_.size()));
    if (take == 0) {
      RDMAREPL_TRY(file_.write_at(written_, buf_));
      written_ += buf_.size();
      buf_.clear();
      continue;
    }
    buf_.insert(buf_.end(), bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(take));
    bytes = bytes.subspan(take);
    payload_len_ += take;
  }
  return ok_status();
}

Status CheckpointWriter::commit() {
  if (!file_.is_open() || committed_)
    return Error(Errc::closed, fmt::format("checkpoint {} is already committed", final_path_));
  if (!buf_.empty()) {
    RDMAREPL_TRY(file_.write_at(written_, buf_));
    written_ += buf_.size();
    buf_.clear();
  }
  uint8_t hdr[kCheckpointHeaderSize];
  encode_header(hdr, seq_, payload_len_, crc_);
  RDMAREPL_TRY(file_.write_at(0, std::span<const uint8_t>(hdr)));
  RDMAREPL_TRY(file_.sync());
  RDMAREPL_TRY(file_.close());
  RDMAREPL_TRY(rename_file(tmp_path_, final_path_));
  committed_ = true;
  return sync_dir(dir_);
}

Result<CheckpointReader> CheckpointReader::open(const std::string& path) {
  auto f = File::open(path, O_RDONLY);
  if (!f) return std::move(f).error();
  auto size = f->size();
  if (!size) return std::move(size).error();
  uint8_t hdr[kCheckpointHeaderSize];
  auto n = f->read_at(0, hdr);
  if (!n) return std::move(n).error();
  auto corrupt = [&](std::string_view why) {
    return Error(Errc::corrupt, fmt::format("checkpoint {} is corrupt ({}); an older checkpoint "
                                            "or a replica must provide the state",
                                            path, why));
  };
  if (*n < kCheckpointHeaderSize) return corrupt("shorter than its header");
  if (load_be32(hdr) != kCheckpointMagic) return corrupt("bad magic");
  if (crc32c::unmask(load_be32(hdr + 28)) != crc32c::value(hdr, 28))
    return corrupt("header checksum mismatch");
  if (load_be16(hdr + 4) != kFormatVersion || load_be16(hdr + 6) != kCheckpointHeaderSize)
    return corrupt("unknown version");
  CheckpointReader r;
  r.seq_ = load_be64(hdr + 8);
  r.payload_len_ = load_be64(hdr + 16);
  if (r.payload_len_ != *size - kCheckpointHeaderSize)
    return corrupt(fmt::format("payload length {} but the file holds {} bytes after the header",
                               r.payload_len_, *size - kCheckpointHeaderSize));
  std::vector<uint8_t> chunk(std::min<uint64_t>(r.payload_len_, kStaging));
  uint32_t crc = 0;
  for (uint64_t off = 0; off < r.payload_len_;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk.size(), r.payload_len_ - off));
    auto got = f->read_at(kCheckpointHeaderSize + off, std::span<uint8_t>(chunk.data(), want));
    if (!got) return std::move(got).error();
    if (*got != want) return corrupt("file shrank while being read");
    crc = crc32c::extend(crc, chunk.data(), want);
    off += want;
  }
  if (crc != crc32c::unmask(load_be32(hdr + 24))) return corrupt("payload checksum mismatch");
  r.file_ = std::move(*f);
  return r;
}

Result<size_t> CheckpointReader::read(std::span<uint8_t> out) {
  const size_t want = static_cast<size_t>(std::min<uint64_t>(out.size(), payload_len_ - pos_));
  if (want == 0) return size_t{0};
  auto n = file_.read_at(kCheckpointHeaderSize + pos_, out.subspan(0, want));
  if (!n) return std::move(n).error();
  pos_ += *n;
  return *n;
}

Result<std::vector<uint64_t>> list_checkpoints(const std::string& dir) {
  auto names = list_dir(dir);
  if (!names) return std::move(names).error();
  std::vector<uint64_t> seqs;
  for (const auto& n : *names) {
    uint64_t seq = 0;
    if (parse_checkpoint_file_name(n, &seq)) seqs.push_back(seq);
  }
  std::sort(seqs.begin(), seqs.end());
  return seqs;
}

Result<std::optional<CheckpointReader>> load_newest_checkpoint(const std::string& dir,
                                                               Reporter* reporter) {
  auto seqs = list_checkpoints(dir);
  if (!seqs) return std::move(seqs).error();
  for (auto it = seqs->rbegin(); it != seqs->rend(); ++it) {
    const std::string path = join_path(dir, checkpoint_file_name(*it));
    auto r = CheckpointReader::open(path);
    if (r && r->seq() == *it) return std::optional<CheckpointReader>(std::move(*r));
    if (!r && !r.error().is(Errc::corrupt)) return std::move(r).error();
    if (reporter == nullptr) {
      log::warn("wal: {}", r ? fmt::format("checkpoint {} names seq {} inside", path, r->seq())
                             : r.error().message());
    } else {
      uint64_t bytes = 0;
      if (auto f = File::open(path, O_RDONLY)) {
        if (auto s = f->size()) bytes = *s;
      }
      Damage d;
      d.file = path;
      d.segment = *it;
      d.offset = 0;
      d.bytes_dropped = bytes;
      d.reason = DamageReason::bad_checkpoint;
      d.at_tail = false;
      reporter->report(d);
    }
  }
  return std::optional<CheckpointReader>();
}

}  // namespace rdmarepl::wal
