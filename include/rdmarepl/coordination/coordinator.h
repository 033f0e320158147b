// Coordinator: the small interface through which a replica group elects its leader and
// keeps its control state (docs/failover.md, "What etcd is used for"). The channel never
// reaches the engine directly; EtcdCoordinator (etcd_coordinator.h) implements it over
// etcd's v3 JSON gateway, and another engine (ZooKeeper, Consul) implements the same calls.
//
// Every call is control plane: it may block for one request (bounded by the engine's
// request timeout) and returns a value or an Error whose message says what to do.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"

namespace rdmarepl::coordination {

// A lease: keys put under it vanish when it expires (nobody renewed it within its TTL) or
// is revoked.
using LeaseId = int64_t;

// The holder of an election. `epoch` is the create revision of the leadership key: every
// new leadership of the group has a higher one than all before it (monotonic across
// elections), so it is the group's fencing token. epoch 0: nobody holds it.
struct Leader {
  uint64_t epoch = 0;
  std::string value;  // what the holder put (its id and address)
  LeaseId lease = 0;
  [[nodiscard]] bool held() const noexcept { return epoch != 0; }
};

struct KeyValue {
  std::string key;
  std::string value;
  uint64_t create_revision = 0;
  uint64_t mod_revision = 0;
  LeaseId lease = 0;
};

class Coordinator {
 public:
  virtual ~Coordinator() = default;

  // A new lease of `ttl` (the engine may grant a longer one; the granted TTL is returned).
  // A TTL of 0 is refused: on etcd it would silently mean a lease nobody renews.
  virtual Result<std::pair<LeaseId, std::chrono::milliseconds>> grant_lease(
      std::chrono::milliseconds ttl) = 0;
  // Renews `lease` once; returns its TTL from now. Errc::not_found when it has expired.
  virtual Result<std::chrono::milliseconds> keep_alive(LeaseId lease) = 0;
  // Ends `lease` at once (its keys vanish). A lease that already expired is not an error.
  virtual Status revoke_lease(LeaseId lease) = 0;

  // One attempt at `election`: when nobody holds it, this caller becomes its holder with
  // `value`, bound to `lease`. Returns the holder after the attempt: this caller
  // (Leader::lease == lease) or the incumbent. Never blocks to wait for the incumbent.
  virtual Result<Leader> campaign(std::string_view election, std::string_view value,
                                  LeaseId lease) = 0;
  // Gives up the leadership of `epoch`, if it is still the holder (a later leadership is
  // never touched).
  virtual Status resign(std::string_view election, uint64_t epoch) = 0;
  // The current holder (epoch 0 when none).
  virtual Result<Leader> leader(std::string_view election) = 0;

  // Puts `key` = `value` (bound to `lease`, 0: none) only when the key's mod revision is
  // `expected_mod_revision` (0: the key must not exist). False when it differed.
  virtual Result<bool> compare_and_put(std::string_view key, std::string_view value,
                                       uint64_t expected_mod_revision, LeaseId lease) = 0;
  // Puts `key` = `value` unconditionally (bound to `lease`, 0: none).
  virtual Status put(std::string_view key, std::string_view value, LeaseId lease) = 0;
  virtual Result<std::optional<KeyValue>> get(std::string_view key) = 0;
  // Every key that starts with `prefix`, in key order.
  virtual Result<std::vector<KeyValue>> list(std::string_view prefix) = 0;
  // Deletes every key that starts with `prefix`.
  virtual Status erase_prefix(std::string_view prefix) = 0;

  // For messages: "etcd at http://127.0.0.1:2379", ...
  [[nodiscard]] virtual std::string describe() const = 0;
};

}  // namespace rdmarepl::coordination
