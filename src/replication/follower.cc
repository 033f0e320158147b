#include "follower.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <thread>

#include "batch_limits.h"
#include "imm.h"
#include "listen_policy.h"
#include "peer_violation.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "transport/bootstrap/hello.h"

namespace rdmarepl::replication::detail {

using transport::Access;

// The follower advertises 2 * kBufferGenerations regions per shard; validate() allows up to
// 1024 shards, which must fit into one bootstrap Hello.
static_assert(2 * kBufferGenerations * 1024 <= transport::bootstrap::kMaxRegions);

Status Follower::make_shards() {
  const size_t large = large_buffer_room(options_);
  for (uint32_t i = 0; i < options_.shards; ++i) {
    auto s = std::make_unique<Shard>();
    s->index = i;
    // Rings take remote writes only from the authenticated leader; nothing else of the
    // process is registered for remote access. Two generations of each (see Shard::gen).
    for (uint32_t g = 0; g < kBufferGenerations; ++g) {
      auto r = memory_.take(options_.ring_bytes, Access::local_write | Access::remote_write,
                            fmt::format("receive ring {} of shard {}", g, i), g);
      if (!r.ok()) return std::move(r).error();
      s->rings[g] = std::move(r).value();
      auto l = memory_.take(large, Access::local_write | Access::remote_write,
                            fmt::format("large-record buffer {} of shard {}", g, i), g);
      if (!l.ok()) return std::move(l).error();
      s->larges[g] = std::move(l).value();
    }
    shards_.push_back(std::move(s));
  }
  return ok_status();
}

Result<std::unique_ptr<ChannelCore>> Follower::create(const ChannelOptions& options,
                                                      std::unique_ptr<transport::Transport> t,
                                                      const StoreHooks& store) {
  std::unique_ptr<Follower> self(new Follower(options, std::move(t), store));
  RDMAREPL_TRY(self->open_memory(follower_memory_plan(options)));
  RDMAREPL_TRY(self->make_shards());
  RDMAREPL_TRY(self->log_.open());
  RDMAREPL_TRY(self->log_.load_leader_epoch());
  auto endpoint = self->sessions_.listen(*self->transport_);
  if (!endpoint.ok()) return std::move(endpoint).error();
  self->endpoint_ = *endpoint;
  if (open_to_network(options.listen.host, options.pre_shared_key))
    log::warn(
        "rdmarepl follower {}: listening without a pre_shared_key (allow_unauthenticated): any "
        "host that reaches this port can act as this follower's leader and write into its "
        "store",
        self->endpoint_.to_string());
  Follower* raw = self.get();
  self->log_.start();
  self->start_threads([raw] { raw->sessions_.accept_loop(); });
  return std::unique_ptr<ChannelCore>(std::move(self));
}

bool Follower::locate_batch(Shard& s, uint32_t imm, std::span<const std::byte>& bytes,
                            uint64_t& offset, std::string& why) noexcept {
  switch (imm_kind(imm)) {
    case ImmKind::ring_batch:
      offset = imm_arg(imm) == kRingAtZero ? 0 : s.cursor;
      if (!ring_imm_matches(imm_arg(imm), offset) || offset + kBatchHeaderSize > s.ring().size()) {
        why = fmt::format(
            "protocol error: batch announced with ring argument 0x{:05x} but the next batch "
            "was expected at {} (or 0 after a wrap; ring is {} bytes)",
            imm_arg(imm), s.cursor, s.ring().size());
        return false;
      }
      bytes = std::span<const std::byte>(s.ring().data() + offset, s.ring().size() - offset);
      return true;
    case ImmKind::large_batch:
      bytes = std::span<const std::byte>(s.large().data(), s.large().size());
      return true;
    default:
      why = fmt::format("protocol error: unexpected immediate 0x{:08x}", imm);
      return false;
  }
}

bool Follower::authenticate(Shard& s, Carrier& c, uint32_t imm, uint32_t& byte_len,
                            std::string& why) noexcept {
  if (!c.mac.enabled()) return true;
  std::span<const std::byte> bytes;
  uint64_t offset = 0;
  if (imm_kind(imm) == ImmKind::checkpoint)
    bytes = std::span<const std::byte>(s.large().data(), s.large().size());
  else if (!locate_batch(s, imm, bytes, offset, why))
    return false;
  const uint64_t counter = c.mac.counter();
  if (byte_len < kMacTagBytes || byte_len > bytes.size()) {
    why = fmt::format(
        "authentication failed: a write of {} bytes from leader {} cannot hold its {}-byte "
        "MAC; nothing of it was applied",
        byte_len, s.leader, kMacTagBytes);
    return false;
  }
  const uint32_t body = byte_len - kMacTagBytes;
  const auto* tag = reinterpret_cast<const uint8_t*>(bytes.data() + body);
  if (!c.mac.open(imm, bytes.first(body),
                  std::span<const uint8_t, kMacTagBytes>(tag, kMacTagBytes))) {
    why = fmt::format(
        "authentication failed: the MAC of {} (message {} of the connection, {} bytes) from "
        "leader {} does not match: it was forged, altered, replayed, reordered or truncated "
        "on the way; nothing of it was applied",
        imm_kind(imm) == ImmKind::checkpoint ? "a checkpoint chunk" : "a batch", counter, body,
        c.conn->peer().address);
    return false;
  }
  byte_len = body;
  return true;
}

namespace {

// The encoded bytes of the records of `v` after its first `skipped` (those applied before
// a reconnect): its payload less theirs.
uint64_t applied_bytes(const BatchView& v, uint64_t skipped) noexcept {
  if (skipped == 0) return v.header.payload_len;
  RecordCursor cur(v);
  Record r;
  for (uint64_t i = 0; i < skipped; ++i)
    if (!cur.next(r)) break;
  return static_cast<uint64_t>(v.payload + v.header.payload_len - cur.position());
}

}  // namespace

void Follower::shard_metrics(MetricsSnapshot& m) const {
  m.shard_records.resize(shards_.size());
  m.shard_bytes.resize(shards_.size());
  m.shard_batches.resize(shards_.size());
  for (size_t i = 0; i < shards_.size(); ++i) {
    m.shard_records[i] = shards_[i]->records_applied.load(std::memory_order_relaxed);
    m.shard_bytes[i] = shards_[i]->bytes_applied.load(std::memory_order_relaxed);
    m.shard_batches[i] = shards_[i]->batches_applied.load(std::memory_order_relaxed);
  }
}

bool Follower::handle_batch(Shard& s, uint32_t imm, uint32_t byte_len, std::string& why) noexcept {
  std::span<const std::byte> bytes;
  uint64_t offset = 0;
  if (!locate_batch(s, imm, bytes, offset, why)) return false;
  BatchView v;
  const BatchError err = parse_batch(bytes, v);
  if (err != BatchError::ok) {
    why = fmt::format(
        "bad batch at {} offset {}: {}; nothing of it was applied (the leader "
        "resends it after reconnecting)",
        imm_kind(imm) == ImmKind::large_batch ? "large-record buffer" : "ring", offset,
        describe(err));
    return false;
  }
  if (v.header.shard != s.index || byte_len != v.padded_size()) {
    why = fmt::format(
        "protocol error: batch for shard {} of {} bytes arrived on shard {} as a "
        "write of {} bytes",
        v.header.shard, v.padded_size(), s.index, byte_len);
    return false;
  }
  uint64_t applied = s.applied.load(std::memory_order_relaxed);
  if (v.header.record_count != 0 && v.header.first_seq > applied + 1) {
    why = fmt::format(
        "protocol error: batch starts at seq {} but seq {} is the next to apply "
        "(a gap)",
        v.header.first_seq, applied + 1);
    return false;
  }
  const uint64_t last = v.header.first_seq + v.header.record_count - 1;
  if (v.header.record_count != 0 && last > applied &&
      !log_.append(s, v, bytes.first(v.padded_size()))) {
    why =
        "the write-ahead log refused the batch (see the error above); nothing of it was applied "
        "or acknowledged. Fix the disk and restart this follower: it recovers from its log";
    return false;
  }
  uint64_t skipped = 0;  // records applied before a reconnect
  applied = apply_batch_(store_, v, applied, skipped);
  s.applied.store(applied, std::memory_order_release);
  if (v.header.record_count != 0) s.consumed_seq = std::max(s.consumed_seq, last);
  if (imm_kind(imm) == ImmKind::ring_batch)
    s.cursor = offset + v.padded_size() + sessions_.tag_bytes();
  const uint64_t record_bytes = applied_bytes(v, skipped);
  ChannelMetrics::add(metrics_.records_applied, v.header.record_count - skipped);
  ChannelMetrics::add(metrics_.bytes_applied, record_bytes);
  ChannelMetrics::add(s.records_applied, v.header.record_count - skipped);
  ChannelMetrics::add(s.bytes_applied, record_bytes);
  ChannelMetrics::add(metrics_.records_skipped, skipped);
  ChannelMetrics::add(metrics_.batches_applied);
  ChannelMetrics::add(s.batches_applied);
  return true;
}

bool Follower::handle_message(Shard& s, Carrier& c, uint32_t imm, uint32_t byte_len,
                              std::string& why, bool& protocol) noexcept {
  // A shard moves to another carrier only once the leader saw everything it sent on the old
  // one acknowledged: acknowledgements still owed there carry nothing it needs.
  if (s.conn != &c) {
    s.conn = &c;
    s.unacked_batches = 0;
  }
  if (imm_kind(imm) == ImmKind::checkpoint) return ship_.handle_chunk(s, byte_len, why, protocol);
  protocol = true;
  if (!handle_batch(s, imm, byte_len, why)) return false;
  ++s.unacked_batches;
  return true;
}

size_t Follower::poll_carrier(Carrier& carrier) noexcept {
  transport::Connection& c = *carrier.conn;
  std::array<transport::Completion, 32> wc;
  const size_t n = c.poll(wc);
  uint32_t received = 0;
  std::string why;
  for (size_t i = 0; i < n; ++i) {
    const auto& e = wc[i];
    if (e.status != transport::WcStatus::success) {
      const bool protocol = count_peer_violation(c, metrics_);
      sessions_.drop(transport::failure_reason(c, e.status), protocol);
      return n;
    }
    if (e.opcode != transport::WcOpcode::recv_rdma_with_imm) continue;  // our acks
    ++received;
    const uint32_t shard = imm_shard(e.imm);
    if (shard >= shards_.size()) {
      ChannelMetrics::add(metrics_.protocol_errors);
      sessions_.drop(fmt::format("protocol error: immediate 0x{:08x} names shard {} of {}", e.imm,
                                 shard, shards_.size()),
                     true);
      return n;
    }
    // A checkpoint was installed: the session ends once its reply is posted, and nothing
    // more of it is applied (the leader resends after reconnecting).
    if (sessions_.end_session().load(std::memory_order_acquire)) continue;
    Shard& s = *shards_[shard];
    std::lock_guard lock(s.mu);
    bool protocol = false;
    uint32_t byte_len = e.byte_len;
    if (!authenticate(s, carrier, e.imm, byte_len, why)) {
      ChannelMetrics::add(metrics_.auth_failures);
      sessions_.drop(fmt::format("shard {}: {}", shard, why), true);
      return n;
    }
    if (!handle_message(s, carrier, e.imm, byte_len, why, protocol)) {
      if (protocol) ChannelMetrics::add(metrics_.protocol_errors);
      sessions_.drop(fmt::format("shard {}: {}", shard, why), protocol);
      return n;
    }
  }
  // Receives go back before the acknowledgements that let the leader send more (progress()
  // sends them after polling every carrier).
  if (received != 0 && c.post_recvs(received) != transport::PostStatus::ok)
    sessions_.drop("re-posting receives failed");
  return n;
}

size_t Follower::send_ack(Shard& s) noexcept {
  const uint64_t durable = log_.ack_seq(s);
  s.acked.store(durable, std::memory_order_release);
  if (s.unacked_batches == 0 || s.conn == nullptr || !sessions_.in_session()) return 0;
  const uint64_t seq = std::min(durable, s.consumed_seq);
  // A new seq to report, or (every logged batch synced) batches that carried nothing new.
  const bool all_synced = s.pending_count == 0;
  if (seq <= s.last_ack_sent && !all_synced) return 0;
  const auto st = s.conn->post_reply(make_imm(ImmKind::ack, s.index, static_cast<uint32_t>(seq)));
  // A carrier's send queue is shared by the acknowledgements of every shard on it: when it
  // is full, this one goes out in a later round (nothing here changed).
  if (st == transport::PostStatus::queue_full) return 0;
  if (st != transport::PostStatus::ok) {
    // The connection's own error names the cause (a peer gone mid-frame, a reset).
    const transport::Connection& conn = *s.conn->conn;
    const bool protocol = count_peer_violation(conn, metrics_);
    const std::string why = conn.error().message();
    sessions_.drop(fmt::format("sending the acknowledgement failed: {}",
                               why.empty() ? std::string("the connection refused it") : why),
                   protocol);
    return 1;
  }
  s.last_ack_sent = seq;
  s.unacked_batches = all_synced ? 0 : s.unacked_batches - 1;
  return 1;
}

size_t Follower::progress() noexcept {
  std::unique_lock lock(sessions_.mu(), std::try_to_lock);
  if (!lock.owns_lock()) return 1;  // the accept thread is installing a connection
  size_t work = 0;
  const auto& carriers = sessions_.carriers();
  for (size_t i = 0; i < carriers.size() && sessions_.in_session(); ++i) {
    Carrier& c = *carriers[i];
    if (!c.conn->healthy()) {
      sessions_.drop(c.conn->error().message());
      break;
    }
    work += poll_carrier(c);
  }
  // Every round, not only after a batch: with Durability::batch an acknowledgement waits for
  // the log's sync.
  for (auto& sp : shards_) {
    if (!sessions_.in_session()) break;
    std::unique_lock slock(sp->mu, std::try_to_lock);
    if (!slock.owns_lock()) {
      ++work;
      continue;
    }
    work += send_ack(*sp);
  }
  return work;
}

// Blocks in the first carrier's wait(): batches on other carriers are seen at most `timeout`
// later, which is the price of not spinning.
void Follower::wait_for_work(std::chrono::microseconds timeout) noexcept {
  const auto ms = std::max<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(timeout), std::chrono::milliseconds(1));
  {
    std::unique_lock lock(sessions_.mu(), std::try_to_lock);
    if (!lock.owns_lock()) return;
    if (sessions_.in_session() && !sessions_.carriers().empty()) {
      (void)sessions_.carriers().front()->conn->wait(ms);
      return;
    }
  }
  std::this_thread::sleep_for(timeout);
}

Status Follower::wait(Ticket, std::chrono::milliseconds) {
  return Error(Errc::invalid_argument, "wait(ticket) is a leader call; a follower has no tickets");
}

Status Follower::wait_all_acked(std::chrono::milliseconds) {
  return Error(Errc::invalid_argument, "wait_all_acked() is a leader call");
}

void Follower::close() noexcept {
  if (closed_.exchange(true)) return;
  stop_threads();
  sessions_.close();
  log_.close();
}

}  // namespace rdmarepl::replication::detail
