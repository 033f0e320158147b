#include "rdmarepl/transport/fault/fault_injecting_transport.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "rdmarepl/core/clock.h"

namespace rdmarepl::transport::fault {
namespace {

// splitmix64: a well-mixed value from a counter.
uint64_t mix(uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

enum Stream : uint64_t { kCorruptPick = 1, kCorruptOffset, kCorruptMask, kFailPick };

class FaultInjectingListener final : public Listener {
 public:
  FaultInjectingListener(std::unique_ptr<Listener> inner, FaultInjectingTransport& owner)
      : inner_(std::move(inner)), owner_(owner) {}
  Result<std::unique_ptr<Connection>> accept(const ConnectionOptions& options,
                                             std::chrono::milliseconds timeout) override {
    auto c = inner_->accept(options, timeout);
    if (!c) return std::move(c).error();
    return owner_.wrap(std::move(*c), options, /*accepted=*/true);
  }
  [[nodiscard]] Endpoint local_endpoint() const override { return inner_->local_endpoint(); }

 private:
  std::unique_ptr<Listener> inner_;
  FaultInjectingTransport& owner_;
};

}  // namespace

FaultInjectingConnection::FaultInjectingConnection(std::unique_ptr<Connection> inner,
                                                   const FaultPlan& plan, uint64_t seed,
                                                   std::unique_ptr<MemoryRegion> scratch_mr,
                                                   std::vector<uint8_t> scratch,
                                                   uint32_t send_queue_depth,
                                                   uint32_t recv_queue_depth)
    : inner_(std::move(inner)),
      plan_(plan),
      seed_(seed),
      scratch_mr_(std::move(scratch_mr)),
      scratch_(std::move(scratch)),
      batch_(send_queue_depth),
      held_(2 * static_cast<size_t>(send_queue_depth) + recv_queue_depth) {}

uint64_t FaultInjectingConnection::draw(uint64_t stream, uint64_t index) const noexcept {
  return mix(seed_ ^ mix(stream * 0x100000001b3ull ^ mix(index)));
}

bool FaultInjectingConnection::chance(uint64_t stream, uint64_t index, double p) const noexcept {
  if (p <= 0) return false;
  return static_cast<double>(draw(stream, index) >> 11) * 0x1.0p-53 < p;
}

void FaultInjectingConnection::corrupt(WriteRequest& w) noexcept {
  const uint64_t total = w.total_length();
  if (!scratch_mr_ || total > plan_.max_corrupt_bytes) return;
  uint8_t* slot = scratch_.data() + next_slot_ * plan_.max_corrupt_bytes;
  next_slot_ = (next_slot_ + 1) % kCorruptSlots;
  size_t at = 0;  // a gathered write is flattened into the scratch copy
  for (size_t i = 0; i < w.segment_count(); ++i) {
    LocalSegment g = w.segment(i);
    if (g.length > 0) std::memcpy(slot + at, g.addr, g.length);
    at += g.length;
  }
  uint64_t offset = draw(kCorruptOffset, data_writes_) % total;
  auto mask = static_cast<uint8_t>(1 + draw(kCorruptMask, data_writes_) % 255);
  slot[offset] ^= mask;
  w.local_addr = slot;
  w.length = static_cast<uint32_t>(total);
  w.extra_count = 0;
  w.lkey = scratch_mr_->region().keys.lkey;
  ++stats_.writes_corrupted;
}

PostStatus FaultInjectingConnection::post_writes(std::span<const WriteRequest> requests) noexcept {
  if (plan_.post_delay.count() > 0) std::this_thread::sleep_for(plan_.post_delay);
  if (!healthy()) return PostStatus::disconnected;
  if (requests.size() > batch_.size()) return PostStatus::queue_full;
  size_t n = requests.size();
  std::copy(requests.begin(), requests.end(), batch_.begin());

  size_t cut = n;
  if (plan_.drop_after_writes > 0 && stats_.writes_posted + n >= plan_.drop_after_writes)
    cut = plan_.drop_after_writes - stats_.writes_posted;

  uint64_t data_writes = data_writes_;
  for (size_t i = 0; i < cut; ++i) {
    WriteRequest& w = batch_[i];
    if (w.total_length() == 0) continue;
    ++data_writes_;
    if (data_writes_ == plan_.corrupt_write_index ||
        chance(kCorruptPick, data_writes_, plan_.corrupt_probability))
      corrupt(w);
  }
  PostStatus st = cut > 0 ? inner_->post_writes(std::span(batch_).first(cut)) : PostStatus::ok;
  if (st != PostStatus::ok) {
    data_writes_ = data_writes;  // nothing was posted: the same writes get the same faults
    return st;
  }
  stats_.writes_posted += cut;
  if (cut == n && stats_.writes_posted < plan_.drop_after_writes) return PostStatus::ok;
  if (plan_.drop_after_writes == 0) return PostStatus::ok;

  // Drop: the posted part flushes in the inner connection, the cut part here, after it.
  inner_->close();
  uint64_t now = mono_ns();
  drain_inner(now);
  failed_ = true;
  stats_.dropped = true;
  error_ = Error(Errc::connection_closed,
                 fmt::format("fault injection dropped the connection to node '{}' after {} "
                             "writes (FaultPlan::drop_after_writes)",
                             inner_->peer().node_id, stats_.writes_posted));
  for (size_t i = cut; i < n; ++i)
    hold(Completion{batch_[i].wr_id, 0, 0, WcOpcode::rdma_write, WcStatus::flushed}, now);
  return PostStatus::ok;
}

PostStatus FaultInjectingConnection::post_recvs(uint32_t count, uint64_t first_wr_id) noexcept {
  if (failed_) return PostStatus::disconnected;
  return inner_->post_recvs(count, first_wr_id);
}

PostStatus FaultInjectingConnection::post_sends(std::span<const SendRequest> requests) noexcept {
  if (plan_.post_delay.count() > 0) std::this_thread::sleep_for(plan_.post_delay);
  if (!healthy()) return PostStatus::disconnected;
  return inner_->post_sends(requests);
}

PostStatus FaultInjectingConnection::post_recv_buffers(
    std::span<const RecvBuffer> buffers) noexcept {
  if (failed_) return PostStatus::disconnected;
  return inner_->post_recv_buffers(buffers);
}

PostStatus FaultInjectingConnection::post_reads(std::span<const ReadRequest> requests) noexcept {
  if (plan_.post_delay.count() > 0) std::this_thread::sleep_for(plan_.post_delay);
  if (!healthy()) return PostStatus::disconnected;
  return inner_->post_reads(requests);
}

void FaultInjectingConnection::hold(const Completion& c, uint64_t now) noexcept {
  auto delay = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(plan_.completion_delay).count());
  held_[held_tail_ % held_.size()] = Held{c, now + delay};
  ++held_tail_;
}

void FaultInjectingConnection::inject_failure(Completion& c) noexcept {
  ++completions_;
  if (failed_) {
    if (c.status == WcStatus::success) c.status = WcStatus::flushed;
    return;
  }
  if (completions_ != plan_.fail_completion_index &&
      !chance(kFailPick, completions_, plan_.fail_completion_probability))
    return;
  c.status = plan_.fail_status;
  ++stats_.completions_failed;
  failed_ = true;
  error_ = Error(
      Errc::io_error,
      fmt::format("fault injection failed completion #{} (wr_id {}) on the connection "
                  "to node '{}' with {}",
                  completions_, c.wr_id, inner_->peer().node_id, to_string(plan_.fail_status)));
  inner_->close();
}

void FaultInjectingConnection::drain_inner(uint64_t now) noexcept {
  Completion buf[64];
  for (;;) {
    size_t room = held_.size() - (held_tail_ - held_head_);
    size_t n = inner_->poll(std::span(buf, std::min(room, std::size(buf))));
    for (size_t i = 0; i < n; ++i) {
      inject_failure(buf[i]);
      hold(buf[i], now);
    }
    if (n < std::size(buf)) break;
  }
}

size_t FaultInjectingConnection::poll(std::span<Completion> out) noexcept {
  uint64_t now = mono_ns();
  drain_inner(now);
  size_t got = 0;
  while (got < out.size() && held_head_ != held_tail_) {
    const Held& h = held_[held_head_ % held_.size()];
    if (h.ready_ns > now) break;
    out[got++] = h.completion;
    ++held_head_;
  }
  return got;
}

Status FaultInjectingConnection::wait(std::chrono::milliseconds timeout) {
  if (held_head_ != held_tail_) {
    uint64_t ready = held_[held_head_ % held_.size()].ready_ns;
    uint64_t now = mono_ns();
    if (ready > now) {
      auto until = std::min<uint64_t>(
          ready - now, static_cast<uint64_t>(
                           std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count()));
      std::this_thread::sleep_for(std::chrono::nanoseconds(until));
    }
    return ok_status();
  }
  if (failed_ && inner_->healthy()) return error_;
  return inner_->wait(timeout);
}

int FaultInjectingConnection::readiness(std::span<pollfd> out) noexcept {
  if (held_head_ != held_tail_) return 0;  // released by time, not by an event: nap
  if (failed_) return -1;
  return inner_->readiness(out);
}

bool FaultInjectingConnection::healthy() const noexcept {
  return !failed_ && inner_->healthy();
}

Error FaultInjectingConnection::error() const {
  if (failed_) return error_;
  return inner_->error();
}

FaultInjectingTransport::FaultInjectingTransport(std::unique_ptr<Transport> inner, FaultPlan plan)
    : inner_(std::move(inner)), plan_(plan) {}

Result<std::unique_ptr<Listener>> FaultInjectingTransport::listen(const Endpoint& where) {
  auto l = inner_->listen(where);
  if (!l) return std::move(l).error();
  return std::unique_ptr<Listener>(new FaultInjectingListener(std::move(*l), *this));
}

Result<std::unique_ptr<Connection>> FaultInjectingTransport::connect(
    const Endpoint& where, const ConnectionOptions& options) {
  auto c = inner_->connect(where, options);
  if (!c) return std::move(c).error();
  return wrap(std::move(*c), options, /*accepted=*/false);
}

Result<std::unique_ptr<Connection>> FaultInjectingTransport::wrap(std::unique_ptr<Connection> conn,
                                                                  const ConnectionOptions& options,
                                                                  bool accepted) {
  if (accepted ? !plan_.on_accept : !plan_.on_connect) return conn;
  uint64_t seed = plan_.seed + 0x9e3779b97f4a7c15ull * connections_++;
  std::unique_ptr<MemoryRegion> scratch_mr;
  std::vector<uint8_t> scratch;
  if (plan_.corrupt_write_index > 0 || plan_.corrupt_probability > 0) {
    if (plan_.max_corrupt_bytes == 0) {
      return Error(Errc::invalid_argument,
                   "FaultPlan::max_corrupt_bytes is 0 but corruption is planned; set it to the "
                   "largest write to corrupt");
    }
    scratch.resize(static_cast<size_t>(plan_.max_corrupt_bytes) * 8);
    auto mr = inner_->register_memory(scratch.data(), scratch.size(), Access::local_write);
    if (!mr) return std::move(mr).error();
    scratch_mr = std::move(*mr);
  }
  return std::unique_ptr<Connection>(new FaultInjectingConnection(
      std::move(conn), plan_, seed, std::move(scratch_mr), std::move(scratch),
      options.send_queue_depth, options.recv_queue_depth));
}

}  // namespace rdmarepl::transport::fault
