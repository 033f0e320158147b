// An in-process Coordinator with etcd's semantics (revisions, leases that expire when not
// renewed, the leadership key's create revision as epoch), for tests without etcd. The
// conformance suite (coordinator_test.cc) runs the same checks against it and a real etcd.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "rdmarepl/coordination/coordinator.h"

namespace rdmarepl::test {

class FakeCoordinator final : public coordination::Coordinator {
  using Clock = std::chrono::steady_clock;

 public:
  Result<std::pair<coordination::LeaseId, std::chrono::milliseconds>> grant_lease(
      std::chrono::milliseconds ttl) override {
    std::lock_guard g(mu_);
    if (ttl.count() <= 0) return Error(Errc::invalid_argument, "TTL must be positive");
    const coordination::LeaseId id = ++next_lease_;
    leases_[id] = {ttl, Clock::now() + ttl};
    return std::make_pair(id, ttl);
  }
  Result<std::chrono::milliseconds> keep_alive(coordination::LeaseId lease) override {
    std::lock_guard g(mu_);
    expire();
    auto it = leases_.find(lease);
    if (it == leases_.end()) return Error(Errc::not_found, "lease expired");
    it->second.expires = Clock::now() + it->second.ttl;
    return it->second.ttl;
  }
  Status revoke_lease(coordination::LeaseId lease) override {
    std::lock_guard g(mu_);
    drop_lease(lease);
    return ok_status();
  }
  Result<coordination::Leader> campaign(std::string_view election, std::string_view value,
                                        coordination::LeaseId lease) override {
    std::lock_guard g(mu_);
    expire();
    auto it = kv_.find(std::string(election));
    if (it == kv_.end()) {
      if (leases_.count(lease) == 0) return Error(Errc::not_found, "lease expired");
      put_locked(election, value, lease);
      it = kv_.find(std::string(election));
    }
    return coordination::Leader{it->second.create_revision, it->second.value, it->second.lease};
  }
  Status resign(std::string_view election, uint64_t epoch) override {
    std::lock_guard g(mu_);
    auto it = kv_.find(std::string(election));
    if (it != kv_.end() && it->second.create_revision == epoch) {
      kv_.erase(it);
      ++revision_;
    }
    return ok_status();
  }
  Result<coordination::Leader> leader(std::string_view election) override {
    std::lock_guard g(mu_);
    if (!reachable_) return Error(Errc::connection_refused, "fake coordinator cut off");
    expire();
    auto it = kv_.find(std::string(election));
    if (it == kv_.end()) return coordination::Leader{};
    return coordination::Leader{it->second.create_revision, it->second.value, it->second.lease};
  }
  Result<bool> compare_and_put(std::string_view key, std::string_view value, uint64_t expected,
                               coordination::LeaseId lease) override {
    std::lock_guard g(mu_);
    expire();
    auto it = kv_.find(std::string(key));
    const uint64_t have = it == kv_.end() ? 0 : it->second.mod_revision;
    if (have != expected) return false;
    put_locked(key, value, lease);
    return true;
  }
  Status put(std::string_view key, std::string_view value, coordination::LeaseId lease) override {
    std::lock_guard g(mu_);
    expire();
    if (lease != 0 && leases_.count(lease) == 0) return Error(Errc::not_found, "lease expired");
    put_locked(key, value, lease);
    return ok_status();
  }
  Result<std::optional<coordination::KeyValue>> get(std::string_view key) override {
    std::lock_guard g(mu_);
    expire();
    auto it = kv_.find(std::string(key));
    if (it == kv_.end()) return std::optional<coordination::KeyValue>();
    return std::optional<coordination::KeyValue>(it->second);
  }
  Result<std::vector<coordination::KeyValue>> list(std::string_view prefix) override {
    std::lock_guard g(mu_);
    expire();
    std::vector<coordination::KeyValue> out;
    for (auto it = kv_.lower_bound(std::string(prefix));
         it != kv_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
      out.push_back(it->second);
    return out;
  }
  Status erase_prefix(std::string_view prefix) override {
    std::lock_guard g(mu_);
    for (auto it = kv_.lower_bound(std::string(prefix));
         it != kv_.end() && it->first.compare(0, prefix.size(), prefix) == 0;)
      it = kv_.erase(it);
    ++revision_;
    return ok_status();
  }
  [[nodiscard]] std::string describe() const override { return "fake coordinator"; }

  // Test control: leader() fails while cut off (the node's view of an unreachable etcd).
  void set_reachable(bool r) {
    std::lock_guard g(mu_);
    reachable_ = r;
  }

 private:
  struct Lease {
    std::chrono::milliseconds ttl;
    Clock::time_point expires;
  };
  void put_locked(std::string_view key, std::string_view value, coordination::LeaseId lease) {
    auto& kv = kv_[std::string(key)];
    ++revision_;
    if (kv.create_revision == 0) kv.create_revision = revision_;
    kv.key = std::string(key);
    kv.value = std::string(value);
    kv.mod_revision = revision_;
    kv.lease = lease;
  }
  void drop_lease(coordination::LeaseId lease) {
    leases_.erase(lease);
    for (auto it = kv_.begin(); it != kv_.end();)
      it = it->second.lease == lease ? kv_.erase(it) : std::next(it);
    ++revision_;
  }
  void expire() {
    const auto now = Clock::now();
    for (auto it = leases_.begin(); it != leases_.end();) {
      if (it->second.expires <= now) {
        const auto id = it->first;
        ++it;
        drop_lease(id);
      } else {
        ++it;
      }
    }
  }

  std::mutex mu_;
  std::map<std::string, coordination::KeyValue> kv_;
  std::map<coordination::LeaseId, Lease> leases_;
  coordination::LeaseId next_lease_ = 0;
  uint64_t revision_ = 1;
  bool reachable_ = true;
};

}  // namespace rdmarepl::test
