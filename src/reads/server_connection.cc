// A read server's client connection: receive, parse, look up, answer (docs/reads.md).
#include "server_connection.h"

#include <fmt/format.h>

#include <algorithm>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"

namespace rdmarepl::reads {
namespace {

// wr_id of the zero-length "ready" send (never a response slot).
constexpr uint64_t kReadyWrId = uint64_t{1} << 40;

}  // namespace

ServerConnection::ServerConnection(std::unique_ptr<transport::Connection> conn,
                                   const ReadServerOptions& options, const ReadHooks& hooks)
    : conn_(std::move(conn)),
      options_(options),
      hooks_(hooks),
      peer_name_(
          fmt::format("read client '{}' at {}", conn_->peer().node_id, conn_->peer().address)),
      rx_(size_t{options.queue_depth} * options.max_request_bytes),
      tx_(size_t{options.queue_depth} * options.max_response_bytes),
      rx_bytes_(options.queue_depth, 0),
      keys_(kMaxKeysPerRequest),
      last_request_ns_(mono_ns()) {
  free_tx_.reserve(options.queue_depth);
  for (uint32_t i = 0; i < options.queue_depth; ++i)
    free_tx_.push_back(options.queue_depth - 1 - i);
  parked_.reserve(options.queue_depth);
  outgoing_.reserve(options.queue_depth);
  value_.reserve(options.max_response_bytes);
}

Result<std::unique_ptr<ServerConnection>> ServerConnection::start(
    transport::Transport& transport, std::unique_ptr<transport::Connection> conn,
    const ReadServerOptions& options, const ReadHooks& hooks) {
  std::unique_ptr<ServerConnection> c(new ServerConnection(std::move(conn), options, hooks));
  auto rx = transport.register_memory(c->rx_.data(), c->rx_.size(), transport::Access::local_write);
  if (!rx.ok()) return std::move(rx).error();
  auto tx = transport.register_memory(c->tx_.data(), c->tx_.size(), transport::Access::local_write);
  if (!tx.ok()) return std::move(tx).error();
  c->rx_mr_ = std::move(*rx);
  c->tx_mr_ = std::move(*tx);
  for (uint32_t i = 0; i < options.queue_depth; ++i) c->repost(i);
  // The client waits for this before its first request: our receives are posted now.
  transport::SendRequest ready{kReadyWrId, nullptr, 0, 0, true};
  if (c->conn_->post_sends({&ready, 1}) != transport::PostStatus::ok) {
    return Error(Errc::connection_closed,
                 fmt::format("{} went away during the read handshake", c->peer_name_));
  }
  return c;
}

void ServerConnection::repost(uint32_t slot) noexcept {
  transport::RecvBuffer b{slot, rx_.data() + size_t{slot} * options_.max_request_bytes,
                          options_.max_request_bytes, rx_mr_->region().keys.lkey};
  if (conn_->post_recv_buffers({&b, 1}) != transport::PostStatus::ok && conn_->healthy())
    fail("could not post a receive buffer");
}

bool ServerConnection::take_tx(uint32_t& tx) noexcept {
  if (free_tx_.empty()) return false;
  tx = free_tx_.back();
  free_tx_.pop_back();
  return true;
}

void ServerConnection::send(uint32_t tx, size_t bytes) noexcept {
  outgoing_.push_back(
      transport::SendRequest{tx, tx_.data() + size_t{tx} * options_.max_response_bytes,
                             static_cast<uint32_t>(bytes), tx_mr_->region().keys.lkey, true});
}

void ServerConnection::flush_sends() noexcept {
  if (outgoing_.empty()) return;
  if (!failed_ && conn_->post_sends(outgoing_) != transport::PostStatus::ok)
    fail("could not post a response");
  outgoing_.clear();
}

void ServerConnection::fail(std::string why) noexcept {
  if (failed_) return;
  failed_ = true;
  // A client that closed its connection between messages, with every answer delivered and
  // nothing waiting, is done reading: routine, not a warning.
  const bool client_left = !conn_->healthy() &&
                           conn_->error().code() == make_error_code(Errc::connection_closed) &&
                           why.find("truncated") == std::string::npos && parked_.empty() &&
                           free_tx_.size() == options_.queue_depth;
  if (client_left) {
    log::info("reads: {} disconnected: {}", peer_name_, why);
  } else {
    log::warn("reads: closing the connection of {}: {}", peer_name_, why);
  }
  conn_->close();
}

size_t ServerConnection::serve(uint64_t now_ns, ServeCounters& counters, bool& alive) noexcept {
  transport::Completion cs[32];
  const size_t n = failed_ ? 0 : conn_->poll(cs);
  for (size_t i = 0; i < n && !failed_; ++i) {
    const transport::Completion& c = cs[i];
    if (c.status != transport::WcStatus::success) {
      fail(transport::failure_reason(*conn_, c.status));
      break;
    }
    if (c.opcode == transport::WcOpcode::recv && c.wr_id < options_.queue_depth) {
      on_request(static_cast<uint32_t>(c.wr_id), c.byte_len, now_ns, counters);
    } else if (c.opcode == transport::WcOpcode::send && c.wr_id < options_.queue_depth) {
      free_tx_.push_back(static_cast<uint32_t>(c.wr_id));
    }
  }
  size_t work = n;
  for (size_t i = 0; i < parked_.size() && !failed_;) {
    const Parked p = parked_[i];
    const uint64_t applied = hooks_.applied_seq(hooks_.progress, p.header.shard);
    if (applied >= p.header.min_seq || now_ns >= p.deadline_ns) {
      parked_[i] = parked_.back();
      parked_.pop_back();
      if (applied >= p.header.min_seq) {
        answer(p.slot, p.header, ResponseStatus::ok, 0, counters);
      } else {
        ++counters.behind;
        answer(p.slot, p.header, ResponseStatus::behind, p.header.min_seq - applied, counters);
      }
      ++work;
      continue;
    }
    ++i;
  }
  flush_sends();
  if (!failed_ && !conn_->healthy()) fail(conn_->error().message());
  alive = !failed_;
  return work;
}

void ServerConnection::on_request(uint32_t slot, uint32_t bytes, uint64_t now_ns,
                                  ServeCounters& c) noexcept {
  last_request_ns_ = now_ns;
  rx_bytes_[slot] = bytes;
  std::span<const uint8_t> msg(rx_.data() + size_t{slot} * options_.max_request_bytes, bytes);
  RequestHeader h;
  std::string_view why;
  if (!parse_request(msg, h, keys_, why)) {
    answer_bad(slot, peek_request_id(msg), why, c);
    return;
  }
  if (h.kind == Consistency::Kind::leader && !options_.leader) {
    answer(slot, h, ResponseStatus::not_leader, 0, c);
    return;
  }
  if (h.kind != Consistency::Kind::at_least) {
    answer(slot, h, ResponseStatus::ok, 0, c);
    return;
  }
  if (h.shard >= hooks_.shards) {
    answer_bad(slot, h.request_id, "the ticket names a shard this replica does not have", c);
    return;
  }
  const uint64_t applied = hooks_.applied_seq(hooks_.progress, h.shard);
  if (applied >= h.min_seq) {
    answer(slot, h, ResponseStatus::ok, 0, c);
  } else if (h.wait_ms == 0) {
    ++c.behind;
    answer(slot, h, ResponseStatus::behind, h.min_seq - applied, c);
  } else {
    const auto wait =
        std::min<uint64_t>(h.wait_ms, static_cast<uint64_t>(options_.max_wait.count()));
    parked_.push_back(Parked{slot, h, now_ns + wait * 1'000'000});
  }
}

void ServerConnection::answer_bad(uint32_t slot, uint32_t request_id, std::string_view why,
                                  ServeCounters& c) noexcept {
  ++c.bad_requests;
  log::warn("reads: {} sent a malformed request (id {}, {} bytes): {}; answered bad_request",
            peer_name_, request_id, rx_bytes_[slot], why);
  RequestHeader h;
  h.request_id = request_id;
  answer(slot, h, ResponseStatus::bad_request, 0, c);
}

void ServerConnection::answer(uint32_t slot, const RequestHeader& h, ResponseStatus status,
                              uint64_t behind_by, ServeCounters& c) noexcept {
  uint32_t tx = 0;
  if (!take_tx(tx)) {
    fail("it has more requests in flight than its queue depth allows");
    return;
  }
  ResponseWriter w(std::span(tx_.data() + size_t{tx} * options_.max_response_bytes,
                             options_.max_response_bytes));
  if (status == ResponseStatus::ok) {
    // Parse again: a parked request's key views were overwritten by later requests.
    std::span<const uint8_t> msg(rx_.data() + size_t{slot} * options_.max_request_bytes,
                                 rx_bytes_[slot]);
    RequestHeader again;
    std::string_view why;
    (void)parse_request(msg, again, keys_, why);  // parsed before: cannot fail
    const size_t largest = options_.max_response_bytes - kResponseHeaderBytes - kResponseEntryBytes;
    for (uint16_t i = 0; i < h.count; ++i) {
      const size_t rest = size_t{h.count} - i - 1;  // room kept for the entries after this one
      const bool found = hooks_.get(hooks_.store, keys_[i], value_);
      const auto rest_bytes = rest * kResponseEntryBytes;
      if (!found) {
        w.add(EntryStatus::not_found, {});
      } else if (value_.size() > largest) {
        w.add(EntryStatus::too_large, {});
      } else if (w.fits(value_.size() + rest_bytes)) {
        w.add(EntryStatus::found, value_);
      } else {
        w.add(EntryStatus::retry, {});
      }
    }
    c.keys += h.count;
  }
  ++c.requests;
  send(tx, w.finish(h.request_id, status, behind_by));
  repost(slot);
}

}  // namespace rdmarepl::reads
