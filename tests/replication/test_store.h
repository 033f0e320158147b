// A map-backed Store for tests, with an order-independent digest of its contents.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "rdmarepl/core/crc32c.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/record.h"
#include "rdmarepl/replication/store.h"

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
  // Checkpoint hooks (SnapshottableStore): u64 count, then per entry u32 key length,
  // u32 value length, key, value; in key order.
  Status snapshot(replication::SnapshotWriter& out) const {
    std::lock_guard lock(mu);
    const uint64_t n = data.size();
    RDMAREPL_TRY(out.write(&n, sizeof n));
    for (const auto& [k, v] : data) {
      const uint32_t lens[2] = {static_cast<uint32_t>(k.size()), static_cast<uint32_t>(v.size())};
      RDMAREPL_TRY(out.write(lens, sizeof lens));
      RDMAREPL_TRY(out.write(k.data(), k.size()));
      RDMAREPL_TRY(out.write(v.data(), v.size()));
    }
    return ok_status();
  }
  Status restore(replication::SnapshotReader& in) {
    auto read = [&](void* p, size_t n) -> Status {
      size_t got = 0;
      while (got < n) {
        auto r = in.read(static_cast<char*>(p) + got, n - got);
        if (!r.ok()) return std::move(r).error();
        if (*r == 0) return Error(Errc::corrupt, "MapStore snapshot is truncated");
        got += *r;
      }
      return ok_status();
    };
    std::map<std::string, std::string> m;
    uint64_t n = 0;
    RDMAREPL_TRY(read(&n, sizeof n));
    for (uint64_t i = 0; i < n; ++i) {
      uint32_t lens[2];
      RDMAREPL_TRY(read(lens, sizeof lens));
      std::string k(lens[0], '\0'), v(lens[1], '\0');
      RDMAREPL_TRY(read(k.data(), k.size()));
      RDMAREPL_TRY(read(v.data(), v.size()));
      m.emplace(std::move(k), std::move(v));
    }
    std::lock_guard lock(mu);
    data = std::move(m);
    return ok_status();
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
