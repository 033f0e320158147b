// The read client's engine: queue, packing, responses, failover (docs/reads.md).
#include "read_engine.h"

#include <fmt/format.h>

#include <algorithm>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"

namespace rdmarepl::reads {
namespace {

bool same_header(const RequestHeader& a, const RequestHeader& b) noexcept {
  return a.kind == b.kind && a.shard == b.shard && a.min_seq == b.min_seq && a.wait_ms == b.wait_ms;
}

constexpr uint32_t kMaxLinkDepth = 16;  // ReplicaLink's cap on messages in flight

}  // namespace

ReadEngine::ReadEngine(const ReadClientOptions& options,
                       std::unique_ptr<transport::Transport> transport)
    : options_(options), transport_(std::move(transport)) {
  for (const auto& e : options.replicas) replicas_.push_back(Replica{e, nullptr, 0, {}});
  leaders_at_ = replicas_.size();
  if (options.leader) replicas_.push_back(Replica{*options.leader, nullptr, 0, {}});
  // Sized once, so that the data path does not allocate.
  const size_t max_flights = replicas_.size() * kMaxLinkDepth;
  flying_.reserve(max_flights);
  spare_.reserve(max_flights);
  todo_.reserve(256);
  active_.reserve(256);
  finished_.reserve(256);
  views_.reserve(kMaxKeysPerRequest);
  responses_.reserve(64);
}

ReadEngine::~ReadEngine() = default;

bool ReadEngine::open_all(std::string& why) {
  bool any = false;
  for (auto& r : replicas_) {
    try_open(r);
    any = any || r.link != nullptr;
    if (!r.link) why += fmt::format(" {}: {};", r.where.to_string(), r.last_error);
  }
  return any;
}

size_t ReadEngine::live_replicas() const noexcept {
  size_t n = 0;
  for (size_t i = 0; i < leaders_at_; ++i) n += replicas_[i].link ? 1 : 0;
  return n;
}

void ReadEngine::try_open(Replica& r) {
  auto link = ReplicaLink::open(*transport_, r.where, options_);
  if (link.ok()) {
    r.link = std::move(*link);
    return;
  }
  r.last_error = link.error().message();
  r.retry_at_ns =
      mono_ns() + static_cast<uint64_t>(options_.reconnect_interval.count()) * 1'000'000;
}

void ReadEngine::drop(size_t i, const std::string& why) {
  Replica& r = replicas_[i];
  log::warn("reads: replica {} failed ({}); sending its reads elsewhere", r.where.to_string(), why);
  r.last_error = why;
  r.link.reset();
  r.retry_at_ns =
      mono_ns() + static_cast<uint64_t>(options_.reconnect_interval.count()) * 1'000'000;
  // Its outstanding messages go back to the front of the queue, in order.
  size_t at = 0;
  for (size_t k = 0; k < flying_.size();) {
    if (flying_[k].replica != i) {
      ++k;
      continue;
    }
    for (const Piece& p : flying_[k].pieces)
      if (p.op != nullptr) todo_.insert(todo_.begin() + static_cast<std::ptrdiff_t>(at++), p);
    spare_.push_back(std::move(flying_[k]));
    flying_[k] = std::move(flying_.back());
    flying_.pop_back();
  }
}

void ReadEngine::enqueue(ReadOp& op) {
  op.unanswered = static_cast<uint32_t>(op.keys.size());
  todo_.push_back(Piece{&op, 0, op.unanswered});
  active_.push_back(&op);
}

size_t ReadEngine::sendable(bool leader, bool& any_live) {
  const size_t begin = leader ? leaders_at_ : 0;
  const size_t end = leader ? replicas_.size() : leaders_at_;
  const uint64_t now = mono_ns();
  size_t n = 0;
  any_live = false;
  for (size_t i = begin; i < end; ++i) {
    Replica& r = replicas_[i];
    if (!r.link && now >= r.retry_at_ns) try_open(r);
    if (!r.link) continue;
    any_live = true;
    n += r.link->can_send() ? 1 : 0;
  }
  return n;
}

ReadEngine::Replica* ReadEngine::pick(bool leader) {
  const size_t begin = leader ? leaders_at_ : 0;
  const size_t end = leader ? replicas_.size() : leaders_at_;
  for (size_t k = 0; k < end - begin; ++k) {
    Replica& r = replicas_[begin + (next_ + k) % (end - begin)];
    if (r.link && r.link->can_send()) {
      next_ = (next_ + k + 1) % (end - begin);
      return &r;
    }
  }
  return nullptr;
}

ReadEngine::Flight ReadEngine::take_spare() {
  if (spare_.empty()) {
    Flight f;
    f.pieces.reserve(options_.max_keys_per_message);
    return f;
  }
  Flight f = std::move(spare_.back());
  spare_.pop_back();
  f.pieces.clear();
  return f;
}

void ReadEngine::send_pending() {
  send_class(false);
  if (has_leader()) send_class(true);
  compact_todo();
}

void ReadEngine::send_class(bool leader) {
  size_t pending = 0;
  for (const Piece& p : todo_)
    if (p.count > 0 && p.op->leader == leader) pending += p.count;
  if (pending == 0) return;
  bool any_live = false;
  const size_t links = sendable(leader, any_live);
  if (!any_live) {
    std::string why;
    const size_t begin = leader ? leaders_at_ : 0;
    const size_t end = leader ? replicas_.size() : leaders_at_;
    for (size_t i = begin; i < end; ++i)
      why += fmt::format(" {}: {};", replicas_[i].where.to_string(), replicas_[i].last_error);
    fail_class(leader, why);
    return;
  }
  if (links == 0) return;  // every link has its queue full: the next pass
  // Full messages first: one message of many keys costs the replica one receive and one
  // send, where one message per link would cost that per link. Successive passes and gets
  // of more than a message's keys go round-robin over the links. Each call sends a message,
  // drops a link or fails a get: this ends.
  while (send_one(leader, options_.max_keys_per_message)) {
  }
}

bool ReadEngine::send_one(bool leader, size_t keys_per_message) {
  auto first = std::find_if(todo_.begin(), todo_.end(),
                            [&](const Piece& p) { return p.count > 0 && p.op->leader == leader; });
  if (first == todo_.end()) return false;
  Replica* r = pick(leader);
  if (r == nullptr) return false;
  ReadOp& op0 = *first->op;
  const size_t max_bytes = r->link->max_request_bytes();
  const std::string_view k0 = op0.keys[first->first];
  if (k0.size() > kMaxReadKeyBytes || kRequestHeaderBytes + 2 + k0.size() > max_bytes) {
    fail_op(op0, Error(Errc::invalid_argument,
                       fmt::format("a key of {} bytes does not fit in a request (the replica "
                                   "takes {} bytes, keys up to {} bytes)",
                                   k0.size(), max_bytes, kMaxReadKeyBytes)));
    return true;
  }
  Flight f = take_spare();
  views_.clear();
  size_t bytes = kRequestHeaderBytes;
  bool full = false;
  for (auto it = first; it != todo_.end() && !full; ++it) {
    Piece& p = *it;
    if (p.count == 0 || p.op->leader != leader || !same_header(p.op->header, op0.header)) continue;
    uint32_t take = 0;
    while (take < p.count && views_.size() < keys_per_message) {
      const std::string_view k = p.op->keys[p.first + take];
      if (bytes + 2 + k.size() > max_bytes || k.size() > kMaxReadKeyBytes) break;
      views_.push_back(k);
      bytes += 2 + k.size();
      ++take;
    }
    full = take < p.count;
    if (take == 0) continue;
    f.pieces.push_back(Piece{p.op, p.first, take});
    p.first += take;
    p.count -= take;
  }
  RequestHeader h = op0.header;
  h.request_id = next_id_++;
  const auto ri = static_cast<size_t>(r - replicas_.data());
  if (!r->link->send(h, views_)) {
    // Not sent: its keys go back to the front, the link is dropped.
    todo_.insert(todo_.begin(), f.pieces.begin(), f.pieces.end());
    const std::string why = r->link->error().empty() ? "a request did not fit" : r->link->error();
    spare_.push_back(std::move(f));
    drop(ri, why);
    return true;
  }
  f.request_id = h.request_id;
  f.replica = ri;
  flying_.push_back(std::move(f));
  return true;
}

void ReadEngine::compact_todo() {
  std::erase_if(todo_, [](const Piece& p) { return p.count == 0; });
}

void ReadEngine::waiting(std::vector<transport::Connection*>& out) {
  out.clear();
  for (auto& r : replicas_)
    if (r.link && r.link->in_flight() > 0) out.push_back(&r.link->connection());
}

void ReadEngine::reap() {
  for (size_t i = 0; i < replicas_.size(); ++i) {
    Replica& r = replicas_[i];
    if (!r.link || r.link->in_flight() == 0) continue;
    responses_.clear();
    const bool ok = r.link->poll(responses_);
    Status sane;  // the responses made sense
    for (const auto& resp : responses_) {
      if (sane) sane = take(i, resp.message);
      r.link->release(resp.slot);
    }
    if (!sane) {
      drop(i, sane.error().message());
    } else if (!ok) {
      drop(i, r.link->error());
    }
  }
}

Status ReadEngine::take(size_t replica, std::span<const uint8_t> message) {
  ResponseReader reader;
  ResponseHeader h;
  std::string_view why;
  if (!reader.open(message, h, why))
    return Error(Errc::protocol_error, fmt::format("it sent a bad response: {}", why));
  auto it = std::find_if(flying_.begin(), flying_.end(), [&](const Flight& f) {
    return f.request_id == h.request_id && f.replica == replica;
  });
  if (it == flying_.end())
    return Error(Errc::protocol_error,
                 fmt::format("it answered request {} that is not outstanding", h.request_id));
  Flight f = std::move(*it);
  *it = std::move(flying_.back());
  flying_.pop_back();
  Status st = fill(f, reader, h);
  if (!st) {
    for (const Piece& p : f.pieces)
      if (p.op != nullptr) fail_op(*p.op, st);
  }
  spare_.push_back(std::move(f));
  return ok_status();
}

Status ReadEngine::fill(Flight& f, ResponseReader& reader, const ResponseHeader& h) {
  if (h.status == ResponseStatus::bad_request)
    return Error(Errc::protocol_error, "a replica refused a request as malformed (see its log)");
  if (h.status == ResponseStatus::not_leader)
    return Error(Errc::invalid_argument,
                 "Consistency::leader read sent to a server that is not the leader; set "
                 "ReadServerOptions::leader on the leader's read server");
  size_t total = 0;
  for (const Piece& p : f.pieces) total += p.count;
  if (h.status != ResponseStatus::behind && h.count != total)
    return Error(Errc::protocol_error, "a replica's response has the wrong number of entries");
  size_t retry_at = 0;  // retried keys go to the front of the queue, in order
  for (Piece& p : f.pieces) {
    uint32_t answered = 0;
    for (uint32_t j = 0; j < p.count; ++j) {
      const uint32_t k = p.first + j;
      ResponseEntry e;
      std::string_view why;
      if (h.status == ResponseStatus::behind) {
        e.status = EntryStatus::not_found;  // no entries follow; filled below
      } else if (!reader.next(e, why)) {
        return Error(Errc::protocol_error, fmt::format("a replica sent a bad response: {}", why));
      }
      if (e.status == EntryStatus::too_large)
        return Error(Errc::too_large,
                     "a value is larger than the replica's max_response_bytes; "
                     "raise ReadServerOptions::max_response_bytes");
      if (p.op == nullptr) continue;  // its get gave up
      ReadResult& out = (*p.op->out)[k];
      if (h.status == ResponseStatus::behind) {
        out = ReadResult{ReadStatus::behind, {}, h.behind_by};
      } else if (e.status == EntryStatus::found) {
        out.status = ReadStatus::found;
        out.value.assign(e.value);
      } else if (e.status == EntryStatus::not_found) {
        out.status = ReadStatus::not_found;
      } else {  // retry: did not fit in this response
        Piece* last = retry_at > 0 ? &todo_[retry_at - 1] : nullptr;
        if (last != nullptr && last->op == p.op && last->first + last->count == k) {
          ++last->count;
        } else {
          todo_.insert(todo_.begin() + static_cast<std::ptrdiff_t>(retry_at++), Piece{p.op, k, 1});
        }
        continue;
      }
      ++answered;
    }
    if (p.op == nullptr) continue;
    p.op->unanswered -= answered;
    if (p.op->unanswered == 0) complete(*p.op, ok_status());
  }
  return ok_status();
}

void ReadEngine::complete(ReadOp& op, Status st) {
  op.status = std::move(st);
  op.done = true;
  auto it = std::find(active_.begin(), active_.end(), &op);
  if (it != active_.end()) active_.erase(it);
  finished_.push_back(&op);
}

void ReadEngine::fail_op(ReadOp& op, Status st) {
  if (op.done) return;
  for (Piece& p : todo_) {
    if (p.op == &op) {
      p.count = 0;
      p.op = nullptr;
    }
  }
  for (Flight& f : flying_)
    for (Piece& p : f.pieces)
      if (p.op == &op) p.op = nullptr;
  complete(op, std::move(st));
}

void ReadEngine::fail_class(bool leader, const std::string& why) {
  for (Piece& p : todo_) {
    if (p.count == 0 || p.op->leader != leader) continue;
    fail_op(*p.op, Error(Errc::connection_refused,
                         fmt::format("no read replica is reachable:{} start their read servers "
                                     "or check ReadClientOptions",
                                     why)));
  }
}

void ReadEngine::expire(uint64_t now_ns) {
  for (size_t i = active_.size(); i-- > 0;) {
    ReadOp& op = *active_[i];
    if (now_ns < op.deadline_ns) continue;
    fail_op(op, Error(Errc::timeout,
                      fmt::format("{} of {} keys got no response within {} ms; the replicas are "
                                  "overloaded or gone",
                                  op.unanswered, op.keys.size(),
                                  options_.request_timeout.count() + op.header.wait_ms)));
  }
}

void ReadEngine::take_finished(std::vector<ReadOp*>& out) noexcept {
  out.clear();
  out.swap(finished_);
}

ReadOp* ReadEngine::waiter_other_than(const ReadOp* self) const noexcept {
  // A caller still on the CPU (it queued its keys and has not gone to sleep yet) takes the
  // role at once; a sleeping one first waits for a core, which on a loaded machine can take
  // a millisecond while nobody polls.
  ReadOp* newest = nullptr;
  for (size_t i = active_.size(); i-- > 0;) {
    ReadOp* op = active_[i];
    if (op == self || op->async != nullptr) continue;
    if (op->signal.load(std::memory_order_relaxed) != kAsleep) return op;
    if (newest == nullptr) newest = op;
  }
  return newest;
}

}  // namespace rdmarepl::reads
