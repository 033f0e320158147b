#include "kv_store.h"

#include <fmt/format.h>

#include <bit>
#include <charconv>
#include <cstring>
#include <functional>
#include <new>

#include <sys/mman.h>

namespace rdmarepl::kvdemo {

namespace {

// The finaliser of splitmix64: spreads every input bit over the output.
constexpr uint64_t mix64(uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

constexpr uint64_t kMul1 = 0x9e3779b185ebca87ull;
constexpr uint64_t kMul2 = 0xc2b2ae3d27d4eb4full;

inline uint64_t load64(const char* p) noexcept {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline uint64_t lane(uint64_t acc, uint64_t word) noexcept {
  return std::rotl(acc + word * kMul2, 31) * kMul1;
}

// A 64-bit non-cryptographic hash for digests: four independent multiply-rotate lanes over
// 32-byte blocks (several times the speed of one dependent chain on long values), then the
// remaining words one by one, then the splitmix64 finaliser over the length as well.
uint64_t hash_bytes(std::string_view bytes, uint64_t seed) noexcept {
  const char* p = bytes.data();
  size_t n = bytes.size();
  uint64_t h = seed ^ (n * kMul1);
  if (n >= 32) {
    uint64_t a = seed + kMul1;
    uint64_t b = seed ^ kMul2;
    uint64_t c = seed;
    uint64_t d = seed - kMul1;
    for (; n >= 32; p += 32, n -= 32) {
      a = lane(a, load64(p));
      b = lane(b, load64(p + 8));
      c = lane(c, load64(p + 16));
      d = lane(d, load64(p + 24));
    }
    h ^= std::rotl(a, 1) + std::rotl(b, 7) + std::rotl(c, 12) + std::rotl(d, 18);
  }
  for (; n >= 8; p += 8, n -= 8) h = lane(h ^ load64(p), kMul2);
  if (n != 0) {
    uint64_t tail = 0;
    std::memcpy(&tail, p, n);
    h = lane(h ^ tail, n);
  }
  return mix64(h);
}

uint64_t key_hash(std::string_view key) noexcept {
  return hash_bytes(key, 0xa4093822299f31d0ull);
}

constexpr size_t kHugePage = 2u << 20;

}  // namespace

DigestTable::~DigestTable() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
}

void DigestTable::rehash(size_t capacity) {
  // Anonymous memory is zero: every slot starts empty. The slots start at a 2 MiB boundary
  // so that the kernel can back them with huge pages.
  const size_t bytes = capacity * sizeof(Slot);
  const size_t map_bytes = bytes + (bytes >= kHugePage ? kHugePage : 0);
  void* map =
      ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) throw std::bad_alloc();
  auto* slots = static_cast<Slot*>(map);
  if (bytes >= kHugePage) {
    const auto at = (reinterpret_cast<uintptr_t>(map) + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
    slots = reinterpret_cast<Slot*>(at);
    (void)::madvise(slots, bytes, MADV_HUGEPAGE);  // a hint: without it, 4 KiB pages
  }
  Slot* old = slots_;
  const size_t old_capacity = capacity_;
  void* old_map = map_;
  const size_t old_map_bytes = map_bytes_;
  slots_ = slots;
  capacity_ = capacity;
  mask_ = capacity - 1;
  map_ = map;
  map_bytes_ = map_bytes;
  size_ = 0;
  for (size_t i = 0; i < old_capacity; ++i)
    if (old[i].key != 0) put(old[i].key, old[i].entry);
  if (old_map != nullptr) ::munmap(old_map, old_map_bytes);
}

void DigestTable::reserve(size_t keys) {
  size_t want = 16;
  while (want / 2 < keys) want *= 2;
  if (want > capacity_) rehash(want);
}

void DigestTable::put(uint64_t key, uint64_t entry) {
  if ((size_ + 1) * 2 > capacity_) rehash(capacity_ == 0 ? 16 : capacity_ * 2);
  size_t i = key & mask_;
  while (slots_[i].key != 0 && slots_[i].key != key) i = (i + 1) & mask_;
  if (slots_[i].key == 0) ++size_;
  slots_[i] = Slot{key, entry};
}

void DigestTable::erase(uint64_t key) noexcept {
  if (capacity_ == 0) return;
  size_t i = key & mask_;
  while (slots_[i].key != key) {
    if (slots_[i].key == 0) return;
    i = (i + 1) & mask_;
  }
  // Backward-shift deletion: move later entries of the probe run into the hole, so that no
  // tombstones are needed and every lookup still stops at the first empty slot.
  size_t hole = i;
  for (size_t j = (i + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
    const size_t home = slots_[j].key & mask_;
    // The entry at j may move to the hole when its home is not in (hole, j] (cyclically).
    const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole] = Slot{0, 0};
  --size_;
}

void DigestTable::clear() noexcept {
  for (size_t i = 0; i < capacity_; ++i) slots_[i] = Slot{0, 0};
  size_ = 0;
}

uint64_t DigestTable::sum() const noexcept {
  uint64_t s = 0;
  for (size_t i = 0; i < capacity_; ++i) s += slots_[i].entry;  // empty slots hold 0
  return s;
}

uint64_t entry_hash(std::string_view key, std::string_view value) noexcept {
  uint64_t hk = hash_bytes(key, 0x243f6a8885a308d3ull);
  uint64_t hv = hash_bytes(value, 0x13198a2e03707344ull);
  // The key length and value length are mixed in so that moving a byte between key and value
  // changes the hash.
  return mix64(hk * 0x9e3779b97f4a7c15ull ^ mix64(hv + value.size()) ^ (key.size() << 48));
}

std::string Digest::to_string() const {
  return fmt::format("{:016x}/{}", sum, entries);
}

bool Digest::parse(std::string_view text, Digest& out) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos) return false;
  auto r1 = std::from_chars(text.data(), text.data() + slash, out.sum, 16);
  auto r2 = std::from_chars(text.data() + slash + 1, text.data() + text.size(), out.entries);
  return r1.ec == std::errc() && r2.ec == std::errc();
}

void KvStore::put(std::string_view key, std::string_view value) {
  if (mode_ == Mode::kDigestOnly) {
    // The slot is fetched while the value is hashed: with a table far larger than the
    // cache, that miss would otherwise cost as much as everything else here.
    const uint64_t k = DigestTable::slot_key(key_hash(key));
    std::lock_guard lock(mu_);
    hashes_.prefetch(k);
    const uint64_t h = entry_hash(key, value);
    hashes_.put(k, h);
    return;
  }
  std::lock_guard lock(mu_);
  auto [it, inserted] = map_.try_emplace(std::string(key));
  if (inserted) {
    bytes_ += key.size();
  } else {
    bytes_ -= it->second.size();
  }
  it->second.assign(value);
  bytes_ += value.size();
}

void KvStore::erase(std::string_view key) {
  std::lock_guard lock(mu_);
  if (mode_ == Mode::kDigestOnly) {
    hashes_.erase(DigestTable::slot_key(key_hash(key)));
    return;
  }
  auto it = map_.find(std::string(key));
  if (it == map_.end()) return;
  bytes_ -= it->first.size() + it->second.size();
  map_.erase(it);
}

bool KvStore::get(std::string_view key, std::string& out) const {
  std::lock_guard lock(mu_);
  auto it = map_.find(std::string(key));
  if (it == map_.end()) return false;
  out = it->second;
  return true;
}

void KvStore::clear() {
  std::lock_guard lock(mu_);
  map_.clear();
  hashes_.clear();
  bytes_ = 0;
}

void KvStore::reserve(size_t keys) {
  std::lock_guard lock(mu_);
  if (mode_ == Mode::kDigestOnly) {
    hashes_.reserve(keys);
  } else {
    map_.reserve(keys);
  }
}

size_t KvStore::size() const {
  std::lock_guard lock(mu_);
  return mode_ == Mode::kFull ? map_.size() : hashes_.size();
}

uint64_t KvStore::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

Digest KvStore::digest() const {
  std::lock_guard lock(mu_);
  Digest d;
  if (mode_ == Mode::kDigestOnly) {
    d.sum = hashes_.sum();
    d.entries = hashes_.size();
    return d;
  }
  for (const auto& [k, v] : map_) d.sum += entry_hash(k, v);
  d.entries = map_.size();
  return d;
}

}  // namespace rdmarepl::kvdemo
