// A map-backed Store for tests, with an order-independent digest of its contents.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "rdmarepl/core/crc32c.h"
#include "rdmarepl/replication/record.h"

namespace rdmarepl::test {

struct MapStore {
  mutable std::mutex mu;
  std::map<std::string, std::string> data;
  uint64_t applied = 0;

  void apply(const replication::Record& r) {
    std::lock_guard lock(mu);
    ++applied;
    if (r.op == replication::Op::put)
      data[std::string(r.key)] = std::string(r.value);
    else
      data.erase(std::string(r.key));
  }
  void put(const std::string& k, const std::string& v) {
    std::lock_guard lock(mu);
    data[k] = v;
  }
  void erase(const std::string& k) {
    std::lock_guard lock(mu);
    data.erase(k);
  }
  // CRC32C over the sorted (key, value) pairs with lengths: equal maps, equal digests.
  [[nodiscard]] uint64_t digest() const {
    std::lock_guard lock(mu);
    return digest_of(data);
  }
  static uint64_t digest_of(const std::map<std::string, std::string>& m) {
    uint32_t crc = 0;
    for (const auto& [k, v] : m) {
      const uint64_t lens[2] = {k.size(), v.size()};
      crc = crc32c::extend(crc, lens, sizeof lens);
      crc = crc32c::extend(crc, k.data(), k.size());
      crc = crc32c::extend(crc, v.data(), v.size());
    }
    return (uint64_t{crc} << 32) | m.size();
  }
  [[nodiscard]] uint64_t applied_count() const {
    std::lock_guard lock(mu);
    return applied;
  }
  [[nodiscard]] size_t size() const {
    std::lock_guard lock(mu);
    return data.size();
  }
};

}  // namespace rdmarepl::test
