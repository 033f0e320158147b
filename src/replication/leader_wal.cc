// The leader's write-ahead log (leader_wal.h): recovery at create() (store, seqs, retained
// window), appending each sealed batch before it is sent. The durability gate on sending,
// eviction and (ack_mode none) commit reads LeaderLog::sendable(); catch-up of followers
// from the log is in leader_catchup.cc. See docs/replication.md, "Durability".
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "batch_limits.h"
#include "imm.h"
#include "leader_wal.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"
#include "rdmarepl/wal/checkpoint.h"
#include "rdmarepl/wal/reader.h"

namespace rdmarepl::replication::detail {

Status LeaderLog::open() {
  if (options_.wal_dir.empty()) return ok_status();
  if (store_.apply_batch == nullptr)
    return Error(Errc::invalid_argument,
                 "a leader with ChannelOptions::wal_dir needs its store (recovery replays the "
                 "log into it); create the channel through ReplicationChannel<Store>");
  Wal::Recovered rec;
  // Per shard: logged batches too large to send under these options, and the largest.
  std::vector<std::pair<uint64_t, uint64_t>> unsendable(shards_.size());
  auto w = Wal::open(
      options_, store_,
      [&](const BatchView& v, std::span<const std::byte> bytes) {
        if (recover_batch(v, bytes)) return;
        auto& [count, largest] = unsendable[v.header.shard];
        ++count;
        largest = std::max<uint64_t>(largest, bytes.size());
      },
      &rec, &metrics_);
  if (!w) return std::move(w).error();
  for (size_t i = 0; i < unsendable.size(); ++i) {
    if (unsendable[i].first == 0) continue;
    log::warn(
        "write-ahead log {}: shard {} holds {} batches of up to {} bytes, more than the {} "
        "bytes these options can send (the log was written with a larger ring_bytes or "
        "max_value_bytes); the retained window starts after them, and a follower that needs "
        "them is refused: restart with the options that wrote the log to serve it",
        options_.wal_dir, i, unsendable[i].first, unsendable[i].second, max_batch_bytes(options_));
  }
  wal_ = std::move(*w);
  catchup_ = std::make_unique<CatchUp>(options_, metrics_, *wal_, shards_, host_);
  // The largest batch the log can hold under any live batch size (options.cc validates the
  // same bound).
  const size_t largest = max_batch_bytes(options_);
  for (auto& sp : shards_) {
    Shard& s = *sp;
    auto st = memory_.take(largest, transport::Access::local_write,
                           fmt::format("catch-up staging buffer of shard {}", s.index));
    if (!st.ok()) return std::move(st).error();
    s.staging = std::move(st).value();
    const uint64_t last = rec.shard_seq[s.index];
    s.next_seq.store(last + 1, std::memory_order_release);
    s.committed.store(last, std::memory_order_release);
    s.durable_seq = last;
    s.durable_bn = s.window.end_bn();
    s.latency_bn = s.window.end_bn();
  }
  return ok_status();
}

void LeaderLog::start() {
  if (!wal_) return;
  catchup_->start();
  wal_->start([this](const std::function<void()>& fn) {
    std::vector<std::unique_lock<std::mutex>> locks;
    locks.reserve(shards_.size());
    for (auto& sp : shards_) locks.emplace_back(sp->mu);
    fn();
  });
}

// A replayed batch goes back into the retained window, so that followers that were behind
// when this leader stopped resume from it. Only the newest batches stay when the log holds
// more than the window (a follower behind them gets Errc::not_found, see install()). False
// for a batch these options cannot send (larger than max_batch_bytes()).
bool LeaderLog::recover_batch(const BatchView& v, std::span<const std::byte> bytes) noexcept {
  if (v.header.record_count == 0) return true;
  Shard& s = *shards_[v.header.shard];
  const uint64_t len = bytes.size();
  if (len > max_batch_bytes(options_)) {
    // Never sendable: the window restarts after it, so that it stays contiguous in seqs.
    while (s.window.evict_oldest([](const BatchDesc&) { return true; })) {
    }
    return false;
  }
  if (host_.make_room(s, len) == RetainedWindow::Room::stalled) return true;
  const auto p = s.window.space().place(len);
  std::memcpy(s.window.data() + p.offset, bytes.data(), len);
  BatchDesc d;
  d.offset = p.offset;
  d.len = len;
  d.consumed = p.consumed;
  d.first_seq = v.header.first_seq;
  d.count = v.header.record_count;
  d.large = large_batch(options_, d.count, len);
  d.t0_ns = mono_ns();
  d.lsn = 0;  // read back from the log: durable
  s.window.push(d);
  return true;
}

void LeaderLog::seal(Shard& s, BatchDesc& d) noexcept {
  if (!wal_) return;
  // The bytes of the wire: a zero-copy batch is gathered from the same segments.
  const transport::WriteRequest w = host_.batch_bytes(s, d);
  std::array<iovec, transport::kMaxWriteSegments> pieces{};
  for (size_t i = 0; i < w.segment_count(); ++i) {
    const transport::LocalSegment g = w.segment(i);
    pieces[i] = iovec{const_cast<void*>(g.addr), g.length};
  }
  d.lsn = wal_->append_gather(s.index, std::span<const iovec>(pieces.data(), w.segment_count()),
                              d.last_seq(), d.count);
}

void LeaderLog::stop_catch_up() noexcept {
  if (catchup_) catchup_->stop();
}

void LeaderLog::close() noexcept {
  if (wal_) wal_->close();
}

}  // namespace rdmarepl::replication::detail
