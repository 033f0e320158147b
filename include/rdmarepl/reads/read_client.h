// ReadClient: reads keys from replicas that run a ReadServer (docs/reads.md).
//
//   auto rc = ReadClient::connect(opts);                     // replicas (+ leader)
//   auto r = (*rc)->get("k");                                // Consistency::any()
//   auto rs = (*rc)->get(keys, Consistency::at_least(ticket, 50ms));
//
// Any number of threads may call get() on one client at once, and should: the keys of
// every waiting get go into one queue, and one pass of the client's I/O packs them into
// messages of at most max_keys_per_message keys (gets of the same consistency share a
// message), full messages first, round-robin over the live replicas, several in flight per
// replica (a pipeline). One of the waiting callers does that I/O for all of them (the
// poller) and hands the role on when its own get is answered: no thread of the client's
// own, and fewer system calls per get the more callers there are. A replica that fails is
// left out, its outstanding messages go to another, and it is tried again after
// reconnect_interval.
//
// Without a thread per get: get_async() queues a get and returns at once; the thread that
// drives the client (poll(), or a blocking get() in progress) sends it and runs its callback
// when the replicas answered. One thread can so keep many gets in flight, as an event loop:
//
//   rc->get_async(key, Consistency::any(), [&](Result<ReadResult> r) { ... });
//   while (outstanding > 0) rc->poll(std::chrono::milliseconds(1));
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/reads/consistency.h"
#include "rdmarepl/reads/options.h"

namespace rdmarepl::reads {

// Completions of get_async(): the result(s), or why the get failed.
using ReadCallback = std::function<void(Result<ReadResult>)>;
using ReadsCallback = std::function<void(Result<std::vector<ReadResult>>)>;

class ReadClient {
 public:
  // Connects to every replica (and the leader); fails only when none can be reached.
  static Result<std::unique_ptr<ReadClient>> connect(const ReadClientOptions& options);
  ~ReadClient();
  ReadClient(const ReadClient&) = delete;
  ReadClient& operator=(const ReadClient&) = delete;

  // One result per key, in order. Errors: no replica reachable (connection_refused), the
  // responses did not come within request_timeout (timeout), Consistency::leader without a
  // leader (invalid_argument), a replica that refused the request (protocol_error).
  Result<std::vector<ReadResult>> get(std::span<const std::string_view> keys,
                                      const Consistency& consistency = Consistency::any());
  Result<ReadResult> get(std::string_view key, const Consistency& consistency = Consistency::any());

  // Queues a get and returns at once; `done` runs exactly once, with what get() would have
  // returned. The bytes of the keys must stay valid until then (the span itself need not).
  // Nothing is sent until some thread drives the client: poll(), or a blocking get() on
  // another thread. `done` runs on that thread, without the client's lock held; it may call
  // get_async() and must not throw, block, or call get() (which fails there with
  // Errc::invalid_argument: it would wait for itself). Gets still unanswered when the client
  // is destroyed complete with Errc::closed, from the destructor.
  Status get_async(std::span<const std::string_view> keys, const Consistency& consistency,
                   ReadsCallback done);
  Status get_async(std::string_view key, const Consistency& consistency, ReadCallback done);

  // Drives the client's I/O on this thread for at most `timeout`: sends the queued gets,
  // reads the responses and runs the callbacks of the answered get_async() calls (and wakes
  // the answered get() callers). Returns the number of callbacks that ran, as soon as one
  // did (after sending the gets they queued). Returns 0 at once when another thread drives
  // the client: that thread runs the callbacks.
  size_t poll(std::chrono::microseconds timeout);

  // Replicas (not counting the leader) with a healthy connection now.
  [[nodiscard]] size_t live_replicas() const;

 private:
  struct Impl;
  explicit ReadClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmarepl::reads
