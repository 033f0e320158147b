// A reproducible write workload: the same spec and seed always give the same sequence of
// operations, so every process (and every rerun) can regenerate or check it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rdmarepl::kvdemo {

struct WorkloadSpec {
  uint64_t records = 1'000'000;
  uint32_t key_size = 16;  // bytes; keys are "k" + zero-padded decimal key index
  uint32_t value_min = 16;
  uint32_t value_max = 1024;
  uint64_t keyspace = 0;  // distinct keys drawn from; 0 means `records` (so some overwrite)
  uint32_t erase_percent = 0;
  uint64_t seed = 42;
};

struct Operation {
  bool erase = false;
  std::string_view key;    // valid until the next call of next()
  std::string_view value;  // empty for erase; valid until the next call of next()
};

// The key of key index `index` in a key of `key_size` bytes ("k" + zero-padded decimal).
std::string key_of(uint64_t index, uint32_t key_size);
// Writes it into `key` (its size is the key size, at least 2).
void format_key(uint64_t index, std::vector<char>& key) noexcept;

// Expected key + value bytes over the whole run (for sizing buffers).
uint64_t expected_payload_bytes(const WorkloadSpec& spec) noexcept;
// Distinct keys the run can write at most (for sizing a store's table).
uint64_t expected_keys(const WorkloadSpec& spec) noexcept;

class Workload {
 public:
  // Needs key_size >= 2 and value_min <= value_max (checked by the callers' flag parsing).
  explicit Workload(const WorkloadSpec& spec);
  Operation next() noexcept;
  [[nodiscard]] const WorkloadSpec& spec() const noexcept { return spec_; }

 private:
  uint64_t rand() noexcept;

  WorkloadSpec spec_;
  uint64_t state_;
  std::vector<char> key_;
  // Values are windows into this random pool: generating a value costs no byte writes.
  std::vector<char> pool_;
};

}  // namespace rdmarepl::kvdemo
