#include "durability.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/thread_name.h"
#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/log.h"

namespace rdmarepl::replication::detail {

namespace {

// Feeds a checkpoint's payload (after the channel's prefix) to Store::restore.
class CheckpointSource final : public SnapshotReader {
 public:
  explicit CheckpointSource(wal::CheckpointReader& in) : in_(in) {}
  Result<size_t> read(void* data, size_t size) override {
    return in_.read(std::span<uint8_t>(static_cast<uint8_t*>(data), size));
  }

 private:
  wal::CheckpointReader& in_;
};

// Streams Store::snapshot into a checkpoint file.
class CheckpointSink final : public SnapshotWriter {
 public:
  explicit CheckpointSink(wal::CheckpointWriter& out) : out_(out) {}
  Status write(const void* data, size_t size) override {
    return out_.append(std::span<const uint8_t>(static_cast<const uint8_t*>(data), size));
  }

 private:
  wal::CheckpointWriter& out_;
};

// Applies checkpoints and logged batches to the store, tracking the seq of every shard.
class Recovery final : public wal::RecoveryHandler {
 public:
  Recovery(const ChannelOptions& o, const StoreHooks& store, const Wal::BatchFn& on_batch,
           std::atomic<uint64_t>& replayed)
      : o_(o), store_(store), on_batch_(on_batch), replayed_(replayed), seq_(o.shards, 0) {
    // A DurableStore already holds everything up to its durable position: only the records
    // after it are replayed.
    if (store_.durable_seq != nullptr)
      for (uint32_t i = 0; i < o_.shards; ++i) seq_[i] = store_.durable_seq(store_.store, i);
  }

  Status restore(wal::CheckpointReader& ck) override {
    auto seqs = read_checkpoint_prefix(ck, o_.shards);
    if (!seqs) return std::move(seqs).error();
    // A durable store at or past the checkpoint in every shard keeps its own state.
    if (store_.durable_seq != nullptr &&
        std::equal(seqs->begin(), seqs->end(), seq_.begin(),
                   [](uint64_t ck_seq, uint64_t have) { return have >= ck_seq; }))
      return ok_status();
    seq_ = std::move(*seqs);
    if (store_.restore == nullptr)
      return Error(Errc::unsupported,
                   fmt::format("{} holds checkpoint {} but the store does not model "
                               "SnapshottableStore (snapshot/restore); add the hooks or remove "
                               "the checkpoint files (the log before them is gone)",
                               o_.wal_dir, ck.path()));
    CheckpointSource src(ck);
    src.set_seqs(seq_);
    auto st = store_.restore(store_.store, src);
    if (!st)
      return Error(st.error().code(), fmt::format("Store::restore from checkpoint {} failed: {}",
                                                  ck.path(), st.error().message()));
    return ok_status();
  }

  Status replay(const wal::Frame& f) override {
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(f.payload.data()),
                                           f.payload.size());
    BatchView v;
    const BatchError err = parse_batch(bytes, v);
    // The frame's CRC matched, so these bytes are what was handed to the log: a batch that
    // fails its own checks was damaged before (in memory) or written by another encoder.
    if (err != BatchError::ok)
      return Error(Errc::corrupt,
                   fmt::format("WAL segment {} offset {}: frame {} ({} records) checks but the "
                               "batch in it does not ({}); nothing of it was applied. Recover "
                               "this node from a replica (clear its wal_dir and store)",
                               f.segment, f.offset, f.first_seq, f.record_count, describe(err)));
    if (v.header.shard >= o_.shards)
      return Error(Errc::corrupt,
                   fmt::format("WAL segment {} offset {}: frame {} holds a batch of shard {} but "
                               "ChannelOptions::shards = {}; use the shard count the log was "
                               "written with",
                               f.segment, f.offset, f.first_seq, v.header.shard, o_.shards));
    uint64_t& seq = seq_[v.header.shard];
    if (v.header.record_count != 0 && v.header.first_seq > seq + 1)
      return Error(Errc::corrupt,
                   fmt::format("WAL segment {} offset {}: shard {} jumps from seq {} to {}; the "
                               "log is missing batches. Recover this node from a replica (clear "
                               "its wal_dir and store)",
                               f.segment, f.offset, v.header.shard, seq, v.header.first_seq));
    uint64_t in_checkpoint = 0;  // records the checkpoint already holds
    const uint64_t before = seq;
    seq = store_.apply_batch(store_.store, v, seq, in_checkpoint);
    ChannelMetrics::add(replayed_, seq - before);
    if (on_batch_) on_batch_(v, bytes.first(std::min(bytes.size(), v.padded_size())));
    return ok_status();
  }

  [[nodiscard]] const std::vector<uint64_t>& seqs() const noexcept { return seq_; }

 private:
  const ChannelOptions& o_;
  const StoreHooks& store_;
  const Wal::BatchFn& on_batch_;
  std::atomic<uint64_t>& replayed_;
  std::vector<uint64_t> seq_;
};

Durability writer_durability(Durability d) {
  // Durability::batch is implemented here (a syncer thread and durable() gating), so the
  // writer itself never blocks an appender in fdatasync.
  switch (d) {
    case Durability::interval:
      return Durability::interval;
    case Durability::none:
    case Durability::batch:
      break;
  }
  return Durability::none;
}

}  // namespace

Status read_exact(wal::CheckpointReader& in, std::span<uint8_t> out, std::string_view when_short) {
  size_t got = 0;
  while (got < out.size()) {
    auto r = in.read(out.subspan(got));
    if (!r) return std::move(r).error();
    if (*r == 0)
      return Error(Errc::corrupt, fmt::format("checkpoint {} {}", in.path(), when_short));
    got += *r;
  }
  return ok_status();
}

Result<std::vector<uint64_t>> read_checkpoint_prefix(wal::CheckpointReader& ck, uint32_t shards) {
  std::vector<uint8_t> head(kChannelCheckpointFixed);
  constexpr std::string_view kShort =
      "is shorter than its channel header; remove it (an older checkpoint or the log is used)";
  RDMAREPL_TRY(read_exact(ck, head, kShort));
  const uint32_t have = load_be32(head.data() + 8);
  if (have == shards) {
    head.resize(kChannelCheckpointFixed + 8 * size_t{shards});
    RDMAREPL_TRY(read_exact(ck, std::span<uint8_t>(head).subspan(kChannelCheckpointFixed), kShort));
  }
  return parse_checkpoint_prefix(head, shards, "checkpoint " + ck.path());
}

Result<std::vector<uint64_t>> parse_checkpoint_prefix(std::span<const uint8_t> payload,
                                                      uint32_t shards, const std::string& what) {
  if (payload.size() < kChannelCheckpointFixed ||
      load_be32(payload.data()) != kChannelCheckpointMagic || load_be16(payload.data() + 4) != 1)
    return Error(Errc::corrupt, fmt::format("{} was not written by a replication channel of this "
                                            "version; point wal_dir at the channel's own "
                                            "directory and run the same rdmarepl version",
                                            what));
  const uint32_t have = load_be32(payload.data() + 8);
  if (have != shards)
    return Error(Errc::invalid_argument,
                 fmt::format("{} holds {} shards but ChannelOptions::shards = {}; use the shard "
                             "count it was written with",
                             what, have, shards));
  if (payload.size() < kChannelCheckpointFixed + 8 * size_t{shards})
    return Error(Errc::corrupt, fmt::format("{} is shorter than its channel header", what));
  std::vector<uint64_t> seqs(shards);
  for (uint32_t i = 0; i < shards; ++i)
    seqs[i] = load_be64(payload.data() + kChannelCheckpointFixed + 8 * size_t{i});
  return seqs;
}

Result<size_t> SpanSnapshotReader::read(void* data, size_t size) {
  const size_t n = std::min(size, bytes_.size());
  if (n != 0) std::memcpy(data, bytes_.data(), n);
  bytes_ = bytes_.subspan(n);
  return n;
}

Wal::Wal(const ChannelOptions& options, const StoreHooks& store)
    : options_(options),
      store_(store),
      gates_(options.durability == Durability::batch),
      shard_seq_(options.shards, 0) {}

Result<std::unique_ptr<Wal>> Wal::open(const ChannelOptions& options, const StoreHooks& store,
                                       const BatchFn& on_batch, Recovered* recovered,
                                       ChannelMetrics* metrics) {
  std::unique_ptr<Wal> self(new Wal(options, store));
  wal::LogOptions lo;
  lo.writer.segment_size = options.wal_segment_bytes;
  lo.writer.durability = writer_durability(options.durability);
  lo.writer.interval = options.durability_interval;
  lo.writer.backend = options.wal_backend;
  std::atomic<uint64_t> replayed{0};  // counted here without a channel (tests)
  if (metrics != nullptr) {
    lo.writer.sync_latency_ns = &metrics->wal_sync_latency_ns;
    lo.writer.append_latency_ns = &metrics->wal_append_latency_ns;
  }
  // A log written with none/interval may lose an unsynced tail that spans a rotation.
  lo.repair = options.durability != Durability::batch;
  Recovery rec(options, store, on_batch,
               metrics != nullptr ? metrics->records_recovered : replayed);
  auto log = wal::Log::open(options.wal_dir, lo, rec);
  if (!log)
    return Error(log.error().code(),
                 fmt::format("{} write-ahead log {}: {}", to_string(options.role), options.wal_dir,
                             log.error().message()));
  self->log_ = std::move(*log);
  const auto& info = self->log_->recovery();
  self->frames_ = info.last_seq;
  self->shard_seq_ = rec.seqs();
  self->starts_.resize(kSegmentStarts);
  for (auto& e : self->starts_) e.seqs.resize(options.shards);
  self->note_segment_start(self->log_->writer().current_segment());
  self->checkpoint_frame_ = info.had_checkpoint ? info.checkpoint_seq : 0;
  self->checkpoint_bytes_ = 0;
  self->checkpoint_time_ = std::chrono::steady_clock::now();
  if (info.had_checkpoint || info.frames_replayed != 0)
    log::info(
        "rdmarepl {}: recovered from {}: checkpoint {} (frame {}), {} batches / {} records "
        "replayed",
        to_string(options.role), options.wal_dir, info.had_checkpoint ? "yes" : "none",
        info.checkpoint_seq, info.frames_replayed, info.records_replayed);
  if (recovered != nullptr) {
    recovered->shard_seq = rec.seqs();
    recovered->info = info;
  }
  return self;
}

void Wal::start(LockAllFn lock_all) {
  lock_all_ = std::move(lock_all);
  if (gates_) syncer_ = std::thread([this] { sync_loop(); });
  const bool triggers = options_.checkpoint_every_bytes != 0 || options_.checkpoint_every.count();
  if (store_.snapshot != nullptr && triggers)
    checkpointer_ = std::thread([this] { checkpoint_loop(); });
}

void Wal::close() noexcept {
  {
    std::lock_guard lk(mu_);
    if (closed_) return;
    closed_ = true;
    stop_ = true;
  }
  cv_.notify_all();
  sync_cv_.notify_all();
  if (syncer_.joinable()) syncer_.join();
  if (checkpointer_.joinable()) checkpointer_.join();
  if (log_) {
    auto st = log_->close();
    if (!st) log::error("rdmarepl: closing the write-ahead log failed: {}", st.error().to_string());
  }
}

uint64_t Wal::append(uint32_t shard, std::span<const std::byte> batch, uint64_t last_seq,
                     uint32_t record_count) noexcept {
  const iovec piece{const_cast<std::byte*>(batch.data()), batch.size()};
  return append_gather(shard, std::span<const iovec>(&piece, 1), last_seq, record_count);
}

uint64_t Wal::append_gather(uint32_t shard, std::span<const iovec> pieces, uint64_t last_seq,
                            uint32_t record_count) noexcept {
  uint64_t lsn = kFailed;
  {
    std::lock_guard lk(append_mu_);
    if (failed_) return kFailed;
    const uint64_t frame = frames_ + 1;
    const uint64_t segment = log_->writer().current_segment();
    auto r = log_->append_gather(pieces, frame, frame, record_count);
    if (!r) {
      failed_ = true;
      log::error(
          "rdmarepl {}: appending to the write-ahead log {} failed: {}; batches are no longer "
          "sent or acknowledged (writes stall). Fix the disk and restart the node: it recovers "
          "from the log",
          to_string(options_.role), options_.wal_dir, r.error().to_string());
      return kFailed;
    }
    frames_ = frame;
    // The writer rotates before a frame that does not fit: this frame opens the new segment
    // and every earlier one is in the segments before it.
    const uint64_t now_in = log_->writer().current_segment();
    if (now_in != segment) note_segment_start(now_in);
    shard_seq_[shard] = std::max(shard_seq_[shard], last_seq);
    lsn = *r;
  }
  if (gates_) {
    {
      std::lock_guard lk(mu_);
      pending_ = true;
    }
    sync_cv_.notify_one();
  }
  return lsn;
}

void Wal::note_segment_start(uint64_t segment) noexcept {
  SegmentStart& e = starts_[starts_count_ % starts_.size()];
  e.segment = segment;
  std::copy(shard_seq_.begin(), shard_seq_.end(), e.seqs.begin());  // no allocation
  ++starts_count_;
}

uint64_t Wal::catchup_segment(uint32_t shard, uint64_t after) noexcept {
  std::lock_guard lk(append_mu_);
  const size_t n = std::min(starts_count_, starts_.size());
  // Newest first: the first segment whose earlier segments hold nothing of the shard after
  // `after`.
  for (size_t i = 0; i < n; ++i) {
    const SegmentStart& e = starts_[(starts_count_ - 1 - i) % starts_.size()];
    if (shard < e.seqs.size() && e.seqs[shard] <= after) return e.segment;
  }
  return 0;
}

void Wal::sync_loop() noexcept {
  core::name_this_thread(options_.role, "walsync");
  std::unique_lock lk(mu_);
  for (;;) {
    sync_cv_.wait(lk, [this] { return stop_ || (pending_ && !hold_); });
    if (stop_) return;
    pending_ = false;
    lk.unlock();
    // One fdatasync covers every batch written so far (group commit); appends made while it
    // runs set pending_ again and are covered by the next round.
    auto st = log_->writer().sync();
    if (!st)
      log::error("rdmarepl {}: syncing the write-ahead log {} failed: {}", to_string(options_.role),
                 options_.wal_dir, st.error().to_string());
    lk.lock();
    if (!st) return;  // the writer's failure is sticky: nothing becomes durable any more
  }
}

void Wal::hold_syncs(bool hold) noexcept {
  {
    std::lock_guard lk(mu_);
    hold_ = hold;
  }
  sync_cv_.notify_all();
}

void Wal::checkpoint_loop() noexcept {
  core::name_this_thread(options_.role, "checkpoint");
  const auto tick = std::chrono::milliseconds(50);
  std::unique_lock lk(mu_);
  while (!stop_) {
    cv_.wait_for(lk, tick, [this] { return stop_; });
    if (stop_) return;
    lk.unlock();
    bool due = false;
    {
      std::lock_guard ck(checkpoint_mu_);
      const uint64_t bytes = log_->writer().stats().bytes - checkpoint_bytes_;
      const auto age = std::chrono::steady_clock::now() - checkpoint_time_;
      due = (options_.checkpoint_every_bytes != 0 && bytes >= options_.checkpoint_every_bytes) ||
            (options_.checkpoint_every.count() != 0 && bytes != 0 &&
             age >= options_.checkpoint_every);
    }
    if (due) {
      auto st = checkpoint();
      if (!st)
        log::error("rdmarepl {}: checkpoint in {} failed: {} (retrying at the next trigger)",
                   to_string(options_.role), options_.wal_dir, st.error().to_string());
    }
    lk.lock();
  }
}

Status Wal::checkpoint() {
  if (store_.snapshot == nullptr)
    return Error(Errc::unsupported,
                 "checkpoints need a store that models SnapshottableStore (snapshot/restore)");
  std::lock_guard ck(checkpoint_mu_);
  uint64_t frame = 0;
  uint64_t bytes = 0;
  std::vector<uint64_t> seqs;
  // The cut: with every shard locked no batch is between its append and its apply, so the
  // store holds at least every record of frames <= `frame` (a follower appends then applies
  // under the shard lock; a leader's store applies a write before replicate()).
  auto cut = [&] {
    std::lock_guard lk(append_mu_);
    frame = frames_;
    seqs = shard_seq_;
  };
  if (lock_all_)
    lock_all_(cut);
  else
    cut();
  bytes = log_->writer().stats().bytes;
  if (frame == 0 || frame == checkpoint_frame_) {
    checkpoint_bytes_ = bytes;
    checkpoint_time_ = std::chrono::steady_clock::now();
    return ok_status();
  }
  auto w = log_->begin_checkpoint(frame);
  if (!w) return std::move(w).error();
  std::vector<uint8_t> head(kChannelCheckpointFixed + 8 * seqs.size());
  store_be32(head.data(), kChannelCheckpointMagic);
  store_be16(head.data() + 4, 1);
  store_be16(head.data() + 6, 0);
  store_be32(head.data() + 8, static_cast<uint32_t>(seqs.size()));
  store_be32(head.data() + 12, 0);
  for (size_t i = 0; i < seqs.size(); ++i)
    store_be64(head.data() + kChannelCheckpointFixed + 8 * i, seqs[i]);
  RDMAREPL_TRY(w->append(head));
  CheckpointSink sink(*w);
  auto st = store_.snapshot(store_.store, sink);
  if (!st)
    return Error(st.error().code(),
                 fmt::format("Store::snapshot failed: {}", st.error().message()));
  RDMAREPL_TRY(log_->commit_checkpoint(*w));
  checkpoint_frame_ = frame;
  checkpoint_bytes_ = bytes;
  checkpoint_time_ = std::chrono::steady_clock::now();
  checkpoints_.fetch_add(1, std::memory_order_relaxed);
  log::info("rdmarepl {}: checkpoint of frame {} written to {}", to_string(options_.role), frame,
            options_.wal_dir);
  return ok_status();
}

}  // namespace rdmarepl::replication::detail

namespace rdmarepl::replication::detail {

Status Wal::install_checkpoint(std::span<const uint8_t> payload, const std::vector<uint64_t>& seqs,
                               const std::function<Status()>& locked) {
  std::lock_guard ck(checkpoint_mu_);  // no checkpoint of our own meanwhile
  Status restored = ok_status();
  uint64_t frame = 0;
  auto cut = [&] {
    restored = locked();
    if (!restored) return;
    std::lock_guard lk(append_mu_);
    frame = ++frames_;  // a number no frame uses: the frames after it follow the checkpoint
    shard_seq_ = seqs;
  };
  if (lock_all_)
    lock_all_(cut);
  else
    cut();
  if (!restored) return restored;
  auto fail = [&](const Error& e) {
    {
      std::lock_guard lk(append_mu_);
      failed_ = true;
    }
    log::error(
        "rdmarepl {}: writing the checkpoint received from the leader to {} failed: {}; batches "
        "are no longer acknowledged. Fix the disk and restart the node: it recovers from its "
        "log and is sent the checkpoint again",
        to_string(options_.role), options_.wal_dir, e.to_string());
    return Error(e.code(), fmt::format("writing the received checkpoint to {} failed: {}",
                                       options_.wal_dir, e.message()));
  };
  auto w = log_->begin_checkpoint(frame);
  if (!w) return fail(w.error());
  if (auto st = w->append(payload); !st) return fail(st.error());
  if (auto st = log_->commit_checkpoint(*w); !st) return fail(st.error());
  checkpoint_frame_ = frame;
  checkpoint_bytes_ = log_->writer().stats().bytes;
  checkpoint_time_ = std::chrono::steady_clock::now();
  checkpoints_.fetch_add(1, std::memory_order_relaxed);
  log::info("rdmarepl {}: checkpoint received from the leader written to {} as frame {}",
            to_string(options_.role), options_.wal_dir, frame);
  return ok_status();
}

}  // namespace rdmarepl::replication::detail
