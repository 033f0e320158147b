#include "rdmarepl/wal/writer.h"

#include <fcntl.h>

#include <algorithm>

#include <fmt/format.h>

#include "core/thread_name.h"
#include "pmem.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"
#include "rdmarepl/wal/layout.h"
#include "uring.h"

namespace rdmarepl::wal {

Status seal_segment(const File& f, uint64_t offset, uint64_t min_seq, uint64_t max_seq,
                    uint32_t frames, bool sync) {
  uint8_t hdr[kFrameHeaderSize] = {};
  FrameHeader h;
  h.type = FrameType::end;
  h.record_count = frames;
  h.first_seq = min_seq;
  h.last_seq = max_seq;
  h.encode(hdr, hdr);  // length 0: the payload pointer is not read
  RDMAREPL_TRY(f.write_at(offset, std::span<const uint8_t>(hdr)));
  RDMAREPL_TRY(f.truncate(offset + kFrameHeaderSize));
  return sync ? f.sync_data() : ok_status();
}

Writer::Writer(std::string dir, WriterOptions options)
    : dir_(std::move(dir)), options_(options), map_(std::make_unique<detail::PmemMapping>()) {}

Result<std::unique_ptr<Writer>> Writer::create(std::string dir, uint64_t segment_number,
                                               uint64_t next_seq, WriterOptions options) {
  // Room for the header, one small frame and the end frame.
  constexpr uint64_t kMinSegment = 4096;
  if (options.segment_size < kMinSegment) {
    return Error(Errc::invalid_argument,
                 fmt::format("WAL segment size {} is below the minimum {}: raise "
                             "WriterOptions::segment_size",
                             options.segment_size, kMinSegment));
  }
  if (options.durability == Durability::interval && options.interval.count() <= 0) {
    return Error(Errc::invalid_argument,
                 fmt::format("WAL durability 'interval' needs a positive interval, got {} ms",
                             options.interval.count()));
  }
  if (options.backend != Backend::automatic && options.backend != Backend::file &&
      options.backend != Backend::pmem) {
    return Error(Errc::invalid_argument,
                 fmt::format("WAL backend {} is not a known value; use auto, file or pmem",
                             static_cast<unsigned>(options.backend)));
  }
  std::unique_ptr<Writer> w(new Writer(std::move(dir), options));
  if (options.submission == Submission::io_uring) {
    auto u = detail::Uring::create();
    if (u) {
      w->uring_ = std::move(*u);
      log::info("wal: {}: appends are submitted through io_uring", w->dir_);
    } else {
      log::warn("wal: {}: io_uring requested but not usable ({}); appends use pwritev", w->dir_,
                u.error().message());
    }
  }
  {
    std::unique_lock lk(w->mu_);
    w->next_seq_ = next_seq;
    RDMAREPL_TRY(w->open_segment(segment_number, next_seq, true));
  }
  if (w->pmem_ && w->uring_) {
    w->uring_.reset();
    log::info("wal: {}: the pmem backend copies frames itself; io_uring is not used", w->dir_);
  }
  if (options.durability == Durability::interval)
    w->flusher_ = std::thread([p = w.get()] { p->flusher_loop(); });
  return w;
}

Writer::~Writer() {
  auto st = close();
  if (!st) log::error("wal: closing the writer of {} failed: {}", dir_, st.error().to_string());
}

Status Writer::open_segment(uint64_t number, uint64_t first_seq, bool sync) {
  const std::string path = join_path(dir_, segment_file_name(number));
  auto f = File::open(path, O_RDWR | O_CREAT | O_EXCL);
  if (!f) {
    if (f.error().code() == std::errc::file_exists) {
      return Error(Errc::already_exists,
                   fmt::format("WAL segment {} already exists: another writer may be using {}; "
                               "open the directory through wal::Log, which recovers first",
                               path, dir_));
    }
    return std::move(f).error();
  }
  uint8_t hdr[kSegmentHeaderSize];
  SegmentHeader{number, first_seq}.encode(hdr);
  RDMAREPL_TRY(f->preallocate(options_.segment_size));
  RDMAREPL_TRY(map_segment(*f, path));
  if (pmem_) {
    const iovec v{hdr, kSegmentHeaderSize};
    map_->write_persist(0, std::span<const iovec>(&v, 1));
  } else {
    RDMAREPL_TRY(f->write_at(0, std::span<const uint8_t>(hdr)));
  }
  // The header, the file size and the directory entry must be durable before any frame in
  // the segment is: now, or by the next group-commit sync (which syncs the directory too).
  // The pmem backend's group commit syncs no file, so it makes them durable now.
  if (sync || pmem_) {
    RDMAREPL_TRY(f->sync_data());
    RDMAREPL_TRY(sync_dir(dir_));
  } else {
    dir_dirty_ = true;
  }
  file_ = std::move(*f);
  segment_ = number;
  offset_ = kSegmentHeaderSize;
  seg_min_seq_ = seg_max_seq_ = 0;
  seg_frames_ = 0;
  return ok_status();
}

Status Writer::map_segment(File& f, const std::string& path) {
  if (options_.backend == Backend::file && !backend_chosen_) {
    backend_chosen_ = true;
    log::info("wal: {}: backend file (requested)", dir_);
  }
  if (options_.backend == Backend::file || (backend_chosen_ && !pmem_)) return ok_status();
  if (!detail::pmem_built()) {
    constexpr const char* kNotBuilt =
        "this build of rdmarepl has no persistent-memory backend (rebuild with libpmem-dev "
        "installed, RDMAREPL_WITH_PMEM=AUTO or ON)";
    if (options_.backend == Backend::pmem) {
      (void)f.close();
      (void)remove_file(path);
      return Error(Errc::unsupported,
                   fmt::format("WAL backend pmem cannot be used for {}: {}, or use "
                               "WriterOptions::backend = auto or file",
                               dir_, kNotBuilt));
    }
    backend_chosen_ = true;
    log::info("wal: {}: backend file (auto: {})", dir_, kNotBuilt);
    return ok_status();
  }
  auto m = detail::PmemMapping::map(path);
  std::string why;
  if (!m) {
    why = m.error().message();
  } else if (!m->is_pmem()) {
    why = fmt::format(
        "{} maps, but not as persistent memory (pmem_is_pmem says no): {} is "
        "not on a DAX file system",
        path, dir_);
  } else {
    *map_ = std::move(*m);
  }
  if (!map_->is_mapped() && (pmem_ || options_.backend == Backend::pmem)) {
    (void)f.close();
    (void)remove_file(path);
    return Error(Errc::unsupported,
                 fmt::format("WAL backend pmem cannot be used for {}: {}; put the WAL on a "
                             "file system mounted with -o dax on a persistent-memory device, "
                             "or use WriterOptions::backend = auto or file",
                             dir_, why));
  }
  if (!backend_chosen_) {
    backend_chosen_ = true;
    pmem_ = map_->is_mapped();
    if (pmem_) {
      log::info(
          "wal: {}: backend pmem ({}; {} maps as persistent memory): appends are "
          "pmem_memcpy + pmem_drain, no fdatasync",
          dir_, options_.backend == Backend::pmem ? "requested" : "auto", path);
    } else {
      log::info("wal: {}: backend file (auto: {})", dir_, why);
    }
  }
  return ok_status();
}

Status Writer::fail(Error e) {
  if (!failed_) {
    failed_ = true;
    error_ = std::move(e);
    log::error("wal: {} (further appends to {} are refused)", error_.to_string(), dir_);
  }
  cv_.notify_all();
  return error_;
}

Status Writer::seal_current(std::unique_lock<std::mutex>& lk) {
  while (syncing_) cv_.wait(lk);
  for (auto& f : unsynced_) {
    if (auto st = f.sync_data(); !st) return fail(std::move(st).error());
  }
  unsynced_.clear();
  // Frames in a mapping were drained as they were written; the end frame goes through the
  // file like the file backend's, and the truncate below must not cut a live mapping.
  if (auto st = map_->unmap(); !st) return fail(std::move(st).error());
  if (auto st = seal_segment(file_, offset_, seg_min_seq_, seg_max_seq_, seg_frames_, true); !st)
    return fail(std::move(st).error());
  if (dir_dirty_) {
    if (auto st = sync_dir(dir_); !st) return fail(std::move(st).error());
    dir_dirty_ = false;
  }
  durable_lsn_.store(written_, std::memory_order_release);
  cv_.notify_all();
  return ok_status();
}

Status Writer::rotate(std::unique_lock<std::mutex>& lk) {
  // With Durability::batch every frame is synced anyway, so sealing synchronously costs
  // one small write. With none/interval a synchronous seal would flush the whole segment
  // on the appending thread (tens of ms per rotation); instead the sealed file waits in
  // unsynced_ for the next group-commit sync, which covers it, the new segment and the
  // directory before durable_lsn moves past any of their frames. The pmem backend's group
  // commit syncs no file, so it seals synchronously (its frames need no flush: one small
  // write, a truncate and an fdatasync of metadata).
  if (options_.durability == Durability::batch || pmem_) {
    RDMAREPL_TRY(seal_current(lk));
    if (auto st = file_.close(); !st) return fail(std::move(st).error());
  } else {
    while (syncing_) cv_.wait(lk);
    if (auto st = seal_segment(file_, offset_, seg_min_seq_, seg_max_seq_, seg_frames_, false); !st)
      return fail(std::move(st).error());
    unsynced_.push_back(std::move(file_));
  }
  if (auto st = open_segment(segment_ + 1, next_seq_, options_.durability == Durability::batch);
      !st)
    return fail(std::move(st).error());
  ++stats_.rotations;
  return ok_status();
}

Result<Lsn> Writer::append(std::span<const uint8_t> batch, uint64_t first_seq, uint64_t last_seq,
                           uint32_t record_count) {
  const iovec piece{const_cast<uint8_t*>(batch.data()), batch.size()};
  return append_gather(std::span<const iovec>(&piece, batch.empty() ? 0 : 1), first_seq, last_seq,
                       record_count);
}

Result<Lsn> Writer::append_gather(std::span<const iovec> pieces, uint64_t first_seq,
                                  uint64_t last_seq, uint32_t record_count) {
  if (pieces.size() > kMaxAppendPieces) {
    return Error(Errc::invalid_argument,
                 fmt::format("WAL append of {} pieces: at most {} are gathered", pieces.size(),
                             kMaxAppendPieces));
  }
  size_t payload = 0;
  for (const iovec& p : pieces) payload += p.iov_len;
  if (payload > kMaxFramePayload) {
    return Error(Errc::too_large, fmt::format("WAL batch of {} bytes exceeds the {}-byte frame "
                                              "limit: split it into smaller batches",
                                              payload, kMaxFramePayload));
  }
  if (first_seq > last_seq) {
    return Error(Errc::invalid_argument,
                 fmt::format("WAL batch has first_seq {} > last_seq {}", first_seq, last_seq));
  }
  const uint64_t started = options_.append_latency_ns != nullptr ? mono_ns() : 0;
  // The CRC is computed before taking the lock so that appenders checksum in parallel.
  uint8_t hdr[kFrameHeaderSize] = {};
  FrameHeader h;
  h.length = static_cast<uint32_t>(payload);
  h.type = FrameType::batch;
  h.record_count = record_count;
  h.first_seq = first_seq;
  h.last_seq = last_seq;
  h.encode(hdr, pieces.data(), pieces.size());
  const uint64_t frame = kFrameHeaderSize + payload;

  Lsn lsn = 0;
  {
    std::unique_lock lk(mu_);
    if (failed_) return error_;
    if (closed_) return Error(Errc::closed, fmt::format("WAL writer of {} is closed", dir_));
    if (offset_ + frame > options_.segment_size && offset_ > kSegmentHeaderSize)
      RDMAREPL_TRY(rotate(lk));
    iovec iov[1 + kMaxAppendPieces] = {{hdr, kFrameHeaderSize}};
    size_t n = 1;
    for (const iovec& p : pieces)
      if (p.iov_len > 0) iov[n++] = p;
    const std::span<const iovec> frame_pieces(iov, n);
    if (pmem_) {
      if (offset_ + frame > map_->size()) {
        return Error(Errc::too_large,
                     fmt::format("WAL frame of {} bytes does not fit a segment of {} bytes: "
                                 "raise WriterOptions::segment_size",
                                 frame, options_.segment_size));
      }
      map_->write_persist(offset_, frame_pieces);
    } else if (auto st = uring_ ? uring_->write_at(file_.fd(), file_.path(), offset_, frame_pieces)
                                : file_.write_at(offset_, frame_pieces);
               !st) {
      (void)fail(std::move(st).error());
      return error_;
    }
    offset_ += frame;
    written_ += frame;
    seg_min_seq_ = seg_frames_ == 0 ? first_seq : std::min(seg_min_seq_, first_seq);
    seg_max_seq_ = seg_frames_ == 0 ? last_seq : std::max(seg_max_seq_, last_seq);
    ++seg_frames_;
    next_seq_ = std::max(next_seq_, last_seq + 1);
    ++stats_.appends;
    stats_.records += record_count;
    stats_.bytes += frame;
    lsn = written_;
  }
  if (options_.durability == Durability::batch) RDMAREPL_TRY(wait_durable(lsn));
  if (options_.append_latency_ns != nullptr)
    options_.append_latency_ns->record(mono_ns() - started);
  return lsn;
}

Status Writer::wait_durable(Lsn lsn) {
  std::unique_lock lk(mu_);
  if (lsn > written_) {
    return Error(Errc::invalid_argument,
                 fmt::format("WAL ticket {} was never issued (last issued {})", lsn, written_));
  }
  while (durable_lsn_.load(std::memory_order_acquire) < lsn) {
    if (failed_) return error_;
    if (syncing_) {
      cv_.wait(lk);
      continue;
    }
    // Become the group-commit leader: one fdatasync covers everything written so far,
    // including frames of appenders now waiting on cv_.
    syncing_ = true;
    const Lsn target = written_;
    std::vector<File> sealed = std::move(unsynced_);
    unsynced_.clear();
    const bool dir = dir_dirty_;
    dir_dirty_ = false;
    lk.unlock();
    const uint64_t sync_start = mono_ns();
    Status st;
    for (auto& f : sealed) {
      if (st.ok()) st = f.sync_data();
    }
    // rotate/close wait for !syncing_: file_ stays put. With pmem every append drained its
    // own stores (a drain covers only the calling CPU's), so the frames up to `target` are
    // already persistent; this drain covers the leader's own.
    if (st.ok()) {
      if (pmem_) {
        detail::PmemMapping::drain();
      } else {
        st = file_.sync_data();
      }
    }
    if (st.ok() && dir) st = sync_dir(dir_);
    if (options_.sync_latency_ns != nullptr)
      options_.sync_latency_ns->record(mono_ns() - sync_start);
    sealed.clear();
    lk.lock();
    syncing_ = false;
    ++stats_.syncs;
    if (!st) return fail(std::move(st).error());
    if (target > durable_lsn_.load(std::memory_order_relaxed)) {
      durable_lsn_.store(target, std::memory_order_release);
    }
    cv_.notify_all();
  }
  return ok_status();
}

void Writer::flusher_loop() {
  core::name_this_thread("rr-walflush");
  std::unique_lock lk(mu_);
  while (!stop_) {
    cv_.wait_for(lk, options_.interval, [this] { return stop_; });
    if (stop_ || failed_ || durable_lsn_.load(std::memory_order_relaxed) >= written_) continue;
    const Lsn target = written_;
    lk.unlock();
    (void)wait_durable(target);  // a failure is sticky and reported by the next append
    lk.lock();
  }
}

Status Writer::close() {
  {
    std::lock_guard lk(mu_);
    if (closed_) return failed_ ? Status(error_) : ok_status();
    stop_ = true;
  }
  cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  std::unique_lock lk(mu_);
  if (closed_) return failed_ ? Status(error_) : ok_status();
  closed_ = true;
  // A writer whose first segment could not be created has nothing to seal.
  Status st = failed_ ? Status(error_) : file_.is_open() ? seal_current(lk) : ok_status();
  if (auto c = file_.close(); st.ok() && !c.ok()) st = std::move(c);
  cv_.notify_all();
  return st;
}

Lsn Writer::written_lsn() const noexcept {
  std::lock_guard lk(mu_);
  return written_;
}

uint64_t Writer::current_segment() const noexcept {
  std::lock_guard lk(mu_);
  return segment_;
}

WriterStats Writer::stats() const noexcept {
  std::lock_guard lk(mu_);
  return stats_;
}

}  // namespace rdmarepl::wal
