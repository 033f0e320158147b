// Leader and the write-ahead log: recovery at create() (store, seqs, retained window),
// appending each sealed batch before it is sent, the durability gate on sending, eviction
// and (ack_mode none) commit, and catch-up of followers from the log (shipping the newest
// checkpoint first when the log no longer reaches back far enough). See docs/replication.md,
// "Durability".
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "imm.h"
#include "leader.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/crc32c.h"
#include "rdmarepl/core/log.h"
#include "rdmarepl/wal/checkpoint.h"
#include "rdmarepl/wal/reader.h"

namespace rdmarepl::replication::detail {

Status Leader::open_wal() {
  if (options_.wal_dir.empty()) return ok_status();
  if (store_.apply_batch == nullptr)
    return Error(Errc::invalid_argument,
                 "a leader with ChannelOptions::wal_dir needs its store (recovery replays the "
                 "log into it); create the channel through ReplicationChannel<Store>");
  Wal::Recovered rec;
  auto w = Wal::open(
      options_, store_,
      [this](const BatchView& v, std::span<const std::byte> bytes) { recover_batch(v, bytes); },
      &rec);
  if (!w) return std::move(w).error();
  wal_ = std::move(*w);
  if (options_.catchup_bytes_per_sec != 0)  // up to 100 ms of it saved up
    catchup_bucket_ =
        TokenBucket(options_.catchup_bytes_per_sec,
                    std::max<uint64_t>(options_.catchup_bytes_per_sec / 10, 1), mono_ns());
  // The largest batch the log can hold (options.cc validates the same bound).
  const size_t largest =
      std::max<size_t>(large_bytes_, options_.batch_bytes + options_.ring_bytes / 4);
  for (auto& sp : shards_) {
    Shard& s = *sp;
    auto st = RegisteredBuffer::create(*transport_, largest, transport::Access::local_write,
                                       fmt::format("catch-up staging buffer of shard {}", s.index));
    if (!st.ok()) return std::move(st).error();
    s.staging = std::move(st).value();
    const uint64_t last = rec.shard_seq[s.index];
    s.next_seq.store(last + 1, std::memory_order_release);
    s.committed.store(last, std::memory_order_release);
    s.durable_seq = last;
    s.durable_bn = s.end_bn;
    s.latency_bn = s.end_bn;
  }
  return ok_status();
}

void Leader::start_wal() {
  if (!wal_) return;
  catchup_ = std::thread([this] { catchup_loop(); });
  wal_->start([this](const std::function<void()>& fn) {
    std::vector<std::unique_lock<std::mutex>> locks;
    locks.reserve(shards_.size());
    for (auto& sp : shards_) locks.emplace_back(sp->mu);
    fn();
  });
}

// A replayed batch goes back into the retained window, so that followers that were behind
// when this leader stopped resume from it. Only the newest batches stay when the log holds
// more than the window (a follower behind them gets Errc::not_found, see install()).
void Leader::recover_batch(const BatchView& v, std::span<const std::byte> bytes) noexcept {
  if (v.header.record_count == 0) return;
  Shard& s = *shards_[v.header.shard];
  const uint64_t len = bytes.size();
  if (make_room(s, len) == Room::stalled) return;
  const auto p = s.space.place(len);
  std::memcpy(s.window.data() + p.offset, bytes.data(), len);
  BatchDesc d;
  d.offset = p.offset;
  d.len = len;
  d.consumed = p.consumed;
  d.first_seq = v.header.first_seq;
  d.count = v.header.record_count;
  d.large = d.count == 1 && len > options_.ring_bytes / 4;
  d.t0_ns = mono_ns();
  d.lsn = 0;  // read back from the log: durable
  desc(s, s.end_bn) = d;
  ++s.end_bn;
}

void Leader::wal_seal(Shard& s, BatchDesc& d) noexcept {
  if (!wal_) return;
  d.lsn = wal_->append(s.index, std::span<const std::byte>(s.window.data() + d.offset, d.len),
                       d.last_seq(), d.count);
}

bool Leader::wal_sendable(const BatchDesc& d) const noexcept {
  return !wal_ || wal_->durable(d.lsn);
}

uint64_t Leader::wal_durable_seq(Shard& s) noexcept {
  if (s.durable_bn < s.first_bn) s.durable_bn = s.first_bn;
  while (s.durable_bn < s.end_bn) {
    const BatchDesc& d = desc(s, s.durable_bn);
    if (!wal_->durable(d.lsn)) break;
    s.durable_seq = d.last_seq();
    ++s.durable_bn;
  }
  return s.durable_seq;
}

// ------------------------------------------------------------------ catch-up from the log

std::optional<uint64_t> Leader::window_resume(const Shard& s, uint64_t resume) const noexcept {
  const uint64_t sealed_last =
      (s.open_active ? s.open.first_seq() : s.next_seq.load(std::memory_order_relaxed)) - 1;
  if (resume >= sealed_last) return s.end_bn;
  uint64_t bn = s.first_bn;
  while (bn < s.end_bn && s.descs[bn % s.descs.size()].last_seq() <= resume) ++bn;
  if (bn == s.end_bn || s.descs[bn % s.descs.size()].first_seq > resume + 1) return std::nullopt;
  return bn;
}

void Leader::catchup_loop() noexcept {
  while (!stopping()) {
    bool any = false;
    for (auto& sp : shards_)
      for (auto& lp : sp->links) {
        bool needed = false;
        {
          std::lock_guard lock(sp->mu);
          needed = lp->up.load(std::memory_order_relaxed) && lp->wal_catchup;
        }
        if (needed && !stopping()) {
          any = true;
          (void)catchup_link(*sp, *lp);
        }
      }
    if (!any && !sleep_for(std::chrono::milliseconds(10))) return;
  }
}

bool Leader::catchup_over(const Link& l, uint64_t generation) noexcept {
  return !l.up.load(std::memory_order_relaxed) || !l.wal_catchup || l.generation != generation;
}

// Streams the logged batches a follower needs, oldest first, one in flight at a time (the
// rate limit: live traffic to the other followers is not held up, and this link's share is
// one batch per round trip), until the retained window holds its next seq; then the link
// continues from the window. The batches read back were evicted from the window, so they
// are durable. Returns true when the link went live.
bool Leader::catchup_link(Shard& s, Link& l) noexcept {
  const auto& peer = options_.peers[l.follower];
  uint64_t generation = 0;
  {
    std::lock_guard lock(s.mu);
    generation = l.generation;
  }
  uint64_t from_acked = 0;
  {
    std::lock_guard lock(s.mu);
    from_acked = l.acked_seq.load(std::memory_order_relaxed);
  }
  // Start at the segment that can hold the follower's next seq, not at the oldest one.
  auto reader =
      wal::LogReader::open(wal_->dir(), nullptr, wal_->catchup_segment(s.index, from_acked));
  if (!reader) {
    std::lock_guard lock(s.mu);
    link_down(s, l,
              fmt::format("reading the write-ahead log for catch-up failed: {}",
                          reader.error().message()));
    return false;
  }
  bool found_in_pass = false;
  int misses = 0;  // passes in a row that did not find the follower's next seq
  uint64_t sent = 0;
  wal::Frame f;
  for (;;) {
    if (stopping()) return false;
    uint64_t acked = 0;
    uint64_t limit = 0;  // first seq the window holds
    {
      std::lock_guard lock(s.mu);
      if (catchup_over(l, generation)) return false;
      acked = l.acked_seq.load(std::memory_order_relaxed);
      if (l.inflight_count == 0) {
        if (auto bn = window_resume(s, acked)) {
          l.next_send_bn = *bn;
          l.wal_catchup = false;
          log::info(
              "rdmarepl leader: follower {} shard {}: caught up from the write-ahead log ({} "
              "batches); continuing from the retained window",
              peer.to_string(), s.index, sent);
          send_pending(s);
          return true;
        }
      }
      const uint64_t sealed_last =
          (s.open_active ? s.open.first_seq() : s.next_seq.load(std::memory_order_relaxed)) - 1;
      limit = s.first_bn < s.end_bn ? desc(s, s.first_bn).first_seq : sealed_last + 1;
    }
    auto more = reader->next(&f);
    if (!more || !*more) {
      if (!more) {
        std::lock_guard lock(s.mu);
        link_down(s, l,
                  fmt::format("reading the write-ahead log {} for catch-up failed: {}", wal_->dir(),
                              more.error().message()));
        return false;
      }
      misses = found_in_pass ? 0 : misses + 1;
      // The second pass in a row without the follower's next seq (the first may have loaded
      // its segments just before that batch was logged and evicted from the window): the log
      // no longer holds it (segments before a checkpoint are deleted) and the window does
      // not either. Ship the newest checkpoint, after which the log holds every batch.
      if (misses >= 2) {
        auto st = ship_checkpoint(s, l, generation, acked);
        if (st) return false;  // the next pass streams the log after the checkpoint
        std::lock_guard lock(s.mu);
        if (!catchup_over(l, generation))
          link_down(s, l,
                    fmt::format("it needs shard {} from seq {}, which neither the retained "
                                "window nor the write-ahead log {} holds any more, and shipping "
                                "the leader's newest checkpoint failed: {}",
                                s.index, acked + 1, wal_->dir(), st.error().message()));
        return false;
      }
      // Frames appended after this pass loaded its segments: read the log again.
      auto again =
          wal::LogReader::open(wal_->dir(), nullptr, wal_->catchup_segment(s.index, acked));
      if (!again) return false;
      reader = std::move(again);
      found_in_pass = false;
      continue;
    }
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(f.payload.data()),
                                           f.payload.size());
    BatchView v;
    if (parse_batch(bytes, v) != BatchError::ok || v.header.shard != s.index ||
        v.header.record_count == 0)
      continue;
    const uint64_t first = v.header.first_seq;
    const uint64_t last = first + v.header.record_count - 1;
    if (last <= acked) continue;
    // A gap: reported at the end of the pass unless a later pass finds the frame.
    if (first > acked + 1) continue;
    found_in_pass = true;
    if (last >= limit) continue;  // the window holds it: the next round switches to it
    const size_t len = v.padded_size();
    const bool large = v.header.record_count == 1 && len > options_.ring_bytes / 4;
    if (!pace_catchup(len)) return false;
    // Post it once the link has room; then wait for its acknowledgement.
    for (;;) {
      if (stopping()) return false;
      {
        std::lock_guard lock(s.mu);
        if (catchup_over(l, generation)) return false;
        std::optional<uint64_t> at;
        bool room = l.inflight_count + 2 < l.inflight.size();
        if (room && large) room = !l.large_busy;
        if (room && !large) {
          at = l.ring_space.where(len);
          room = at.has_value();
        }
        if (room && len <= s.staging.size()) {
          std::memcpy(s.staging.data(), bytes.data(), len);
          transport::WriteRequest wr;
          wr.wr_id = UINT64_MAX;
          wr.local_addr = s.staging.data();
          wr.length = static_cast<uint32_t>(len);
          wr.lkey = s.staging.lkey();
          if (large) {
            wr.remote_addr = l.large.addr;
            wr.rkey = l.large.rkey;
            wr.imm = make_imm(ImmKind::large_batch, 0);
          } else {
            wr.remote_addr = l.ring.addr + *at;
            wr.rkey = l.ring.rkey;
            wr.imm = make_imm(ImmKind::ring_batch, static_cast<uint32_t>(*at / kBatchAlign));
          }
          const auto st = l.conn->post_writes(std::span<const transport::WriteRequest>(&wr, 1));
          if (st != transport::PostStatus::ok && st != transport::PostStatus::queue_full) {
            link_down(s, l, "a catch-up write from the log failed");
            return false;
          }
          if (st == transport::PostStatus::ok) {
            InFlight fl;
            fl.last_seq = last;
            fl.large = large;
            if (large)
              l.large_busy = true;
            else
              fl.ring_consumed = l.ring_space.place(len).consumed;
            l.inflight[(l.inflight_head + l.inflight_count) % l.inflight.size()] = fl;
            ++l.inflight_count;
            ++sent;
            ChannelMetrics::add(metrics_.batches_resent);
            break;
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    while (l.acked_seq.load(std::memory_order_acquire) < last) {
      if (stopping() || !l.up.load(std::memory_order_acquire)) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

bool Leader::pace_catchup(uint64_t bytes) noexcept {
  const uint64_t wait = catchup_bucket_.take(bytes, mono_ns());
  return wait == 0 || sleep_for(std::chrono::nanoseconds(wait));
}

// ------------------------------------------------------------------ shipping a checkpoint

// The newest checkpoint goes to the follower in chunks through its large-record buffer, one
// in flight: each chunk waits for the follower's reply (docs/wire_format.md, "Checkpoint
// shipping"). The file is read with no lock held; the shard lock is taken only to post a
// chunk and to look at the replies.
Status Leader::ship_checkpoint(Shard& s, Link& l, uint64_t generation, uint64_t acked) {
  const auto& peer = options_.peers[l.follower];
  auto ck = wal::load_newest_checkpoint(wal_->dir(), nullptr);
  if (!ck) return std::move(ck).error();
  if (!ck->has_value())
    return Error(Errc::not_found,
                 fmt::format("{} holds no checkpoint (the store does not model SnapshottableStore "
                             "or no checkpoint trigger is set): restore the follower from a "
                             "snapshot, or raise retain_bytes",
                             wal_->dir()));
  wal::CheckpointReader& in = **ck;
  const uint64_t total = in.size();
  auto seqs = read_checkpoint_prefix(in, options_.shards);
  if (!seqs) return std::move(seqs).error();
  const uint64_t covers = (*seqs)[s.index];
  if (covers < acked)
    return Error(Errc::not_found,
                 fmt::format("the newest checkpoint {} covers shard {} only up to seq {}, and the "
                             "log before it is deleted: restore the follower from a snapshot, or "
                             "raise retain_bytes",
                             in.path(), s.index, covers));
  RDMAREPL_TRY(in.rewind());

  auto closed = [] { return Error(Errc::closed, "the connection went down while shipping"); };
  // Nothing else is in flight on a catching-up link once its last batch was acknowledged.
  for (;;) {
    {
      std::lock_guard lock(s.mu);
      if (catchup_over(l, generation)) return closed();
      if (l.inflight_count == 0 && !l.large_busy) {
        l.shipping = true;
        l.ship_replies = 0;
        break;
      }
    }
    if (!sleep_for(std::chrono::microseconds(100))) return closed();
  }
  const size_t room = std::min<size_t>(l.large.length, s.staging.size());
  if (room <= kChunkHeaderSize + 4096)
    return Error(Errc::invalid_argument, "the large-record buffer is too small for chunks");
  const size_t chunk = room - kChunkHeaderSize;
  log::info(
      "rdmarepl leader: follower {} shard {}: needs seq {}, which the log no longer holds; "
      "shipping checkpoint {} ({} bytes, covers shard {} up to seq {})",
      peer.to_string(), s.index, acked + 1, in.path(), total, s.index, covers);
  const uint64_t t0 = mono_ns();
  uint64_t offset = 0;
  uint32_t crc = 0;
  uint32_t replies = 0;
  do {
    const auto len = static_cast<uint32_t>(std::min<uint64_t>(chunk, total - offset));
    auto* payload = reinterpret_cast<uint8_t*>(s.staging.data() + kChunkHeaderSize);
    RDMAREPL_TRY(read_exact(in, std::span<uint8_t>(payload, len), "ended early"));
    ChunkHeader h;
    h.id = in.seq();
    h.total = total;
    h.offset = offset;
    h.length = len;
    crc = crc32c::extend(crc, payload, len);
    h.crc = crc;
    h.flags = offset + len == total ? kChunkLast : 0;
    encode_chunk_header(h,
                        std::span<std::byte, kChunkHeaderSize>(s.staging.data(), kChunkHeaderSize));
    if (!pace_catchup(kChunkHeaderSize + len)) return closed();
    {
      std::lock_guard lock(s.mu);
      if (catchup_over(l, generation)) return closed();
      transport::WriteRequest wr;
      wr.wr_id = UINT64_MAX;
      wr.local_addr = s.staging.data();
      wr.length = static_cast<uint32_t>(kChunkHeaderSize + len);
      wr.lkey = s.staging.lkey();
      wr.remote_addr = l.large.addr;
      wr.rkey = l.large.rkey;
      wr.imm = make_imm(ImmKind::checkpoint, 0);
      const auto st = l.conn->post_writes(std::span<const transport::WriteRequest>(&wr, 1));
      if (st != transport::PostStatus::ok) {
        link_down(s, l, "a checkpoint chunk could not be posted");
        return closed();
      }
    }
    ++replies;
    offset += len;
    // The reply: the staging buffer is free again and the follower wants the next chunk.
    for (;;) {
      {
        std::lock_guard lock(s.mu);
        if (catchup_over(l, generation)) return closed();
        if (l.ship_replies >= replies) {
          const auto reply = static_cast<ShipReply>(l.ship_reply);
          if (reply == ShipReply::no_restore)
            return Error(Errc::unsupported,
                         fmt::format("follower {} refused the checkpoint: its store does not "
                                     "model SnapshottableStore (snapshot/restore hooks); add "
                                     "them to the follower's store, or restore the follower "
                                     "from a snapshot",
                                     peer.to_string()));
          if (reply == ShipReply::failed)
            return Error(Errc::io_error,
                         fmt::format("follower {} could not install the checkpoint (see its "
                                     "log)",
                                     peer.to_string()));
          const bool want =
              offset == total ? reply == ShipReply::installed : reply == ShipReply::chunk_ok;
          if (!want) {
            ChannelMetrics::add(metrics_.protocol_errors);
            return Error(Errc::protocol_error,
                         fmt::format("protocol error: follower {} replied {} to checkpoint chunk "
                                     "at offset {}",
                                     peer.to_string(), l.ship_reply, offset - len));
          }
          if (offset == total) {
            l.shipping = false;
            // Counted before the acked seq moves: whoever sees the follower caught up sees
            // the shipment counted.
            ChannelMetrics::add(metrics_.checkpoints_shipped);
            if (covers > l.acked_seq.load(std::memory_order_relaxed))
              l.acked_seq.store(covers, std::memory_order_release);
          }
          break;
        }
      }
      if (!sleep_for(std::chrono::microseconds(100))) return closed();
    }
  } while (offset < total);
  const uint64_t ms = (mono_ns() - t0) / 1'000'000;
  log::info(
      "rdmarepl leader: follower {} shard {}: checkpoint {} installed ({} bytes in {} ms); "
      "streaming the log after it",
      peer.to_string(), s.index, in.path(), total, ms);
  return ok_status();
}

}  // namespace rdmarepl::replication::detail
