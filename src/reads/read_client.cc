// ReadClient: batching, spreading over replicas, failover (docs/reads.md).
#include "rdmarepl/reads/read_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <thread>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"
#include "replica_link.h"
#include "replication/transport_select.h"

namespace rdmarepl::reads {

// One endpoint and, while it works, its link.
struct Replica {
  transport::Endpoint where;
  std::unique_ptr<ReplicaLink> link;
  uint64_t retry_at_ns = 0;
  std::string last_error;
};

// A message's worth of keys (indexes into the caller's keys) and where it went.
struct Chunk {
  std::vector<uint32_t> keys;
  uint32_t request_id = 0;
  size_t replica = 0;
};

struct ReadClient::Impl {
  ReadClientOptions options;
  std::unique_ptr<transport::Transport> transport;
  std::vector<Replica> replicas;  // options.replicas, then the leader (if any)
  size_t leaders_at = 0;          // index of the leader in `replicas` (== size: none)
  size_t next = 0;                // round-robin position
  uint32_t next_id = 1;

  void try_open(Replica& r) {
    auto link = ReplicaLink::open(*transport, r.where, options);
    if (link.ok()) {
      r.link = std::move(*link);
      return;
    }
    r.last_error = link.error().message();
    r.retry_at_ns =
        mono_ns() + static_cast<uint64_t>(options.reconnect_interval.count()) * 1'000'000;
  }
  // Drops replica `i` and puts its outstanding messages back at the front of `todo`.
  void fail_over(size_t i, const std::string& why, std::vector<Chunk>& flying,
                 std::deque<Chunk>& todo) {
    drop(replicas[i], why);
    for (size_t k = 0; k < flying.size();) {
      if (flying[k].replica != i) {
        ++k;
        continue;
      }
      todo.push_front(std::move(flying[k]));
      flying.erase(flying.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  void drop(Replica& r, const std::string& why) {
    log::warn("reads: replica {} failed ({}); sending its reads elsewhere", r.where.to_string(),
              why);
    r.last_error = why;
    r.link.reset();
    r.retry_at_ns =
        mono_ns() + static_cast<uint64_t>(options.reconnect_interval.count()) * 1'000'000;
  }
  // A live replica among `targets` that can take a request now; reconnects due ones.
  Replica* pick(bool leader, bool& any_live);
  std::vector<Chunk> cut(std::span<const std::string_view> keys, uint32_t max_request) const;
  Status run(std::span<const std::string_view> keys, const Consistency& c,
             std::vector<ReadResult>& out);
  // Waits until a replica with messages outstanding may have a response (docs/reads.md).
  void await_responses(std::vector<transport::Connection*>& waiting);
  Status take(const ReplicaLink::Response& r, std::vector<Chunk>& flying, std::deque<Chunk>& todo,
              std::vector<ReadResult>& out);
};

Replica* ReadClient::Impl::pick(bool leader, bool& any_live) {
  const size_t begin = leader ? leaders_at : 0;
  const size_t end = leader ? replicas.size() : leaders_at;
  any_live = false;
  const uint64_t now = mono_ns();
  for (size_t k = 0; k < end - begin; ++k) {
    Replica& r = replicas[begin + (next + k) % (end - begin)];
    if (!r.link && now >= r.retry_at_ns) try_open(r);
    if (!r.link) continue;
    any_live = true;
    if (r.link->can_send()) {
      next = (next + k + 1) % (end - begin);
      return &r;
    }
  }
  return nullptr;
}

std::vector<Chunk> ReadClient::Impl::cut(std::span<const std::string_view> keys,
                                         uint32_t max_request) const {
  std::vector<Chunk> chunks;
  size_t bytes = kRequestHeaderBytes;
  for (uint32_t i = 0; i < keys.size(); ++i) {
    const size_t add = 2 + keys[i].size();
    if (chunks.empty() || chunks.back().keys.size() >= options.max_keys_per_message ||
        bytes + add > max_request) {
      chunks.emplace_back();
      bytes = kRequestHeaderBytes;
    }
    chunks.back().keys.push_back(i);
    bytes += add;
  }
  return chunks;
}

Status ReadClient::Impl::take(const ReplicaLink::Response& r, std::vector<Chunk>& flying,
                              std::deque<Chunk>& todo, std::vector<ReadResult>& out) {
  ResponseReader reader;
  ResponseHeader h;
  std::string_view why;
  if (!reader.open(r.message, h, why))
    return Error(Errc::protocol_error, fmt::format("a replica sent a bad response: {}", why));
  auto it = std::find_if(flying.begin(), flying.end(),
                         [&](const Chunk& c) { return c.request_id == h.request_id; });
  if (it == flying.end())
    return Error(
        Errc::protocol_error,
        fmt::format("a replica answered request {} that is not outstanding", h.request_id));
  Chunk chunk = std::move(*it);
  flying.erase(it);
  if (h.status == ResponseStatus::bad_request)
    return Error(Errc::protocol_error, "a replica refused a request as malformed (see its log)");
  if (h.status == ResponseStatus::not_leader)
    return Error(Errc::invalid_argument,
                 "Consistency::leader read sent to a server that is not the leader; set "
                 "ReadServerOptions::leader on the leader's read server");
  if (h.status == ResponseStatus::behind) {
    for (uint32_t k : chunk.keys) out[k] = ReadResult{ReadStatus::behind, {}, h.behind_by};
    return ok_status();
  }
  if (h.count != chunk.keys.size())
    return Error(Errc::protocol_error, "a replica's response has the wrong number of entries");
  Chunk again;
  for (uint32_t k : chunk.keys) {
    ResponseEntry e;
    if (!reader.next(e, why))
      return Error(Errc::protocol_error, fmt::format("a replica sent a bad response: {}", why));
    if (e.status == EntryStatus::found) {
      out[k].status = ReadStatus::found;
      out[k].value.assign(e.value);
    } else if (e.status == EntryStatus::not_found) {
      out[k].status = ReadStatus::not_found;
    } else if (e.status == EntryStatus::retry) {
      again.keys.push_back(k);
    } else {
      return Error(Errc::too_large,
                   "a value is larger than the replica's max_response_bytes; "
                   "raise ReadServerOptions::max_response_bytes");
    }
  }
  if (!again.keys.empty()) todo.push_front(std::move(again));
  return ok_status();
}

void ReadClient::Impl::await_responses(std::vector<transport::Connection*>& waiting) {
  // One blocking poll(2) over every replica with messages outstanding, so that only those
  // with bytes waiting are read. No spinning: a waiting client leaves the cores to the
  // replicas.
  waiting.clear();
  for (auto& x : replicas)
    if (x.link && x.link->in_flight() > 0) waiting.push_back(&x.link->connection());
  if (waiting.empty()) {
    std::this_thread::sleep_for(std::chrono::microseconds(10));  // no replica can take one
    return;
  }
  (void)transport::wait_any(waiting, std::chrono::milliseconds(1));
}

Status ReadClient::Impl::run(std::span<const std::string_view> keys, const Consistency& c,
                             std::vector<ReadResult>& out) {
  const bool leader = c.kind == Consistency::Kind::leader;
  if (leader && leaders_at == replicas.size())
    return Error(Errc::invalid_argument,
                 "Consistency::leader read, but ReadClientOptions::leader is not set");
  uint32_t max_request = UINT32_MAX;
  for (auto& r : replicas)
    if (r.link) max_request = std::min(max_request, r.link->max_request_bytes());
  if (max_request == UINT32_MAX) max_request = 64 * 1024;
  std::deque<Chunk> todo;
  for (auto& ch : cut(keys, max_request)) todo.push_back(std::move(ch));
  std::vector<Chunk> flying;
  std::vector<ReplicaLink::Response> responses;
  std::vector<std::string_view> views;
  RequestHeader h;
  h.kind = c.kind;
  h.shard = c.ticket.shard;
  h.min_seq = c.ticket.seq;
  h.wait_ms = static_cast<uint32_t>(c.kind == Consistency::Kind::at_least ? c.wait.count() : 0);
  const Deadline deadline =
      Deadline::after(options.request_timeout + std::chrono::milliseconds(h.wait_ms));
  std::vector<transport::Connection*> waiting;  // links with messages outstanding
  while (!todo.empty() || !flying.empty()) {
    while (!todo.empty()) {
      bool any_live = false;
      Replica* r = pick(leader, any_live);
      if (r == nullptr) {
        if (!any_live && flying.empty()) {
          std::string why;
          for (auto& x : replicas)
            why += fmt::format(" {}: {};", x.where.to_string(), x.last_error);
          return Error(Errc::connection_refused,
                       fmt::format("no read replica is reachable:{} start their read servers or "
                                   "check ReadClientOptions",
                                   why));
        }
        break;
      }
      Chunk& ch = todo.front();
      views.clear();
      for (uint32_t k : ch.keys) views.push_back(keys[k]);
      h.request_id = next_id++;
      if (!r->link->send(h, views)) {
        fail_over(static_cast<size_t>(r - replicas.data()),
                  r->link->error().empty() ? "a request did not fit" : r->link->error(), flying,
                  todo);
        continue;
      }
      ch.request_id = h.request_id;
      ch.replica = static_cast<size_t>(r - replicas.data());
      flying.push_back(std::move(ch));
      todo.pop_front();
    }
    await_responses(waiting);
    for (size_t i = 0; i < replicas.size(); ++i) {
      Replica& r = replicas[i];
      if (!r.link || r.link->in_flight() == 0) continue;
      responses.clear();
      const bool ok = r.link->poll(responses);
      for (const auto& resp : responses) {
        Status st = take(resp, flying, todo, out);
        r.link->release(resp.slot);
        if (!st) return st;
      }
      if (!ok) fail_over(i, r.link->error(), flying, todo);
    }
    if (deadline.expired())
      return Error(Errc::timeout,
                   fmt::format("{} read messages got no response within {} ms; the replicas are "
                               "overloaded or gone",
                               flying.size() + todo.size(), options.request_timeout.count()));
  }
  return ok_status();
}

ReadClient::ReadClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ReadClient::~ReadClient() = default;

Result<std::unique_ptr<ReadClient>> ReadClient::connect(const ReadClientOptions& options) {
  RDMAREPL_TRY(options.validate());
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  auto t = replication::select_transport(options.transport);
  if (!t.ok()) return std::move(t).error();
  impl->transport = std::move(*t);
  for (const auto& e : options.replicas) impl->replicas.push_back(Replica{e, nullptr, 0, {}});
  impl->leaders_at = impl->replicas.size();
  if (options.leader) impl->replicas.push_back(Replica{*options.leader, nullptr, 0, {}});
  std::string why;
  bool any = false;
  for (auto& r : impl->replicas) {
    impl->try_open(r);
    any = any || r.link != nullptr;
    if (!r.link) why += fmt::format(" {}: {};", r.where.to_string(), r.last_error);
  }
  if (!any)
    return Error(Errc::connection_refused,
                 fmt::format("no read replica is reachable:{} start their read servers or check "
                             "ReadClientOptions",
                             why));
  return std::unique_ptr<ReadClient>(new ReadClient(std::move(impl)));
}

Result<std::vector<ReadResult>> ReadClient::get(std::span<const std::string_view> keys,
                                                const Consistency& consistency) {
  std::vector<ReadResult> out(keys.size());
  if (keys.empty()) return out;
  RDMAREPL_TRY(impl_->run(keys, consistency, out));
  return out;
}

Result<ReadResult> ReadClient::get(std::string_view key, const Consistency& consistency) {
  auto r = get(std::span<const std::string_view>(&key, 1), consistency);
  if (!r.ok()) return std::move(r).error();
  return std::move((*r)[0]);
}

size_t ReadClient::live_replicas() const {
  size_t n = 0;
  for (size_t i = 0; i < impl_->leaders_at; ++i) n += impl_->replicas[i].link ? 1 : 0;
  return n;
}

}  // namespace rdmarepl::reads
