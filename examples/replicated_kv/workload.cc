#include "workload.h"

#include <algorithm>

namespace rdmarepl::kvdemo {

namespace {
// Values start at one of this many offsets into the pool; 1 MiB gives enough distinct
// values that equal values are rare, and stays in the L2/L3 cache.
constexpr size_t kPoolWindow = 1u << 20;

// The splitmix64 finaliser turns the seed into the start state: seeds that differ by one
// must not give sequences that are shifts of each other.
uint64_t scramble(uint64_t x) noexcept {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

void format_key(uint64_t index, std::vector<char>& key) noexcept {
  key[0] = 'k';
  for (size_t i = key.size() - 1; i >= 1; --i) {
    key[i] = static_cast<char>('0' + index % 10);
    index /= 10;
  }
}

std::string key_of(uint64_t index, uint32_t key_size) {
  std::vector<char> key(std::max(key_size, 2u));
  format_key(index, key);
  return std::string(key.data(), key.size());
}

Workload::Workload(const WorkloadSpec& spec)
    : spec_(spec),
      state_(scramble(spec.seed + 0x632be59bd9b4e019ull)),
      key_(std::max(spec.key_size, 2u)) {
  if (spec_.keyspace == 0) spec_.keyspace = std::max<uint64_t>(spec_.records, 1);
  pool_.resize(kPoolWindow + spec_.value_max);
  for (auto& c : pool_) c = static_cast<char>(rand() >> 56);
}

// splitmix64: fast, full period, and good enough for picking keys and sizes.
uint64_t Workload::rand() noexcept {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Operation Workload::next() noexcept {
  Operation op;
  format_key(rand() % spec_.keyspace, key_);
  op.key = std::string_view(key_.data(), key_.size());
  uint64_t r = rand();
  if (spec_.erase_percent != 0 && r % 100 < spec_.erase_percent) {
    op.erase = true;
    return op;
  }
  uint64_t span = uint64_t{spec_.value_max} - spec_.value_min + 1;
  auto len = static_cast<size_t>(spec_.value_min + (r >> 8) % span);
  size_t offset = rand() % kPoolWindow;
  op.value = std::string_view(pool_.data() + offset, len);
  return op;
}

uint64_t expected_payload_bytes(const WorkloadSpec& spec) noexcept {
  uint64_t avg_value = (uint64_t{spec.value_min} + spec.value_max) / 2;
  return spec.records * (std::max(spec.key_size, 2u) + avg_value);
}

uint64_t expected_keys(const WorkloadSpec& spec) noexcept {
  return spec.keyspace == 0 ? spec.records : std::min(spec.keyspace, spec.records);
}

}  // namespace rdmarepl::kvdemo
