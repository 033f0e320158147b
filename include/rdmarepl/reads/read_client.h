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
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/reads/consistency.h"
#include "rdmarepl/reads/options.h"

namespace rdmarepl::reads {

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

  // Replicas (not counting the leader) with a healthy connection now.
  [[nodiscard]] size_t live_replicas() const;

 private:
  struct Impl;
  explicit ReadClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rdmarepl::reads
