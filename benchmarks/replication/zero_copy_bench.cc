// Leader CPU per write, copied values against zero-copy values, over TCP on 127.0.0.1.
//
//   copy:      replicate(key, string_view): the value is copied into the retained window.
//   zero-copy: replicate(key, allocate()'d Buffer): the value is sent and checksummed from
//              the Buffer, never copied.
//   region:    replicate(key, string_view) of a value in the store's own mmap'd arena,
//              registered once with register_region(): sent by gather from the arena.
//
// In every mode the writer produces the value the same way, by copying it from a source
// buffer into where the store keeps it (a reused std::string for copy, the pool Buffer for
// zero-copy, the next slot of the append-only arena for region), so the difference is what
// the channel does. The arena has 4 x 128 slots, so a slot is written again only long after
// its batch was committed and evicted (the lifetime contract of register_region()). At most 128
// writes are not yet committed at a time (the writer sleeps 10 us while the oldest is not), which
// keeps the pool from running dry; "fallbacks" counts zero-copy writes that found it empty anyway.
// One leader, one follower (same process), ack_mode=one, 1 shard. The leader polls manually:
// a poller thread of this program calls progress() and sleeps 20 us when it found no work.
// Leader CPU = CLOCK_THREAD_CPUTIME_ID of the writer thread + of that poller thread (the
// kernel's TCP send copy included: the writer posts, so it runs sendmsg()).
//
// Usage: rdmarepl-bench-zero-copy [--writes N] [--rounds R]  (rounds alternate the modes)
#include <fmt/format.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rdmarepl/rdmarepl.h"

using namespace rdmarepl;
using namespace std::chrono_literals;

namespace {

struct NullStore {
  uint64_t applied = 0;
  void apply(const replication::Record&) { ++applied; }
};
using Channel = ReplicationChannel<NullStore>;

uint64_t cpu_ns(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}
uint64_t thread_cpu_ns() {
  return cpu_ns(CLOCK_THREAD_CPUTIME_ID);
}

enum Mode { kCopy, kZeroCopy, kRegion, kModes };
constexpr const char* kModeNames[kModes] = {"copy", "zero-copy", "region"};

struct Sample {
  double cpu_ns_per_write = 0;
  double writer_ns_per_write = 0;  // of which the writer thread
  double writes_per_s = 0;
  uint64_t fallbacks = 0;  // zero-copy writes that found the pool empty and copied
  uint64_t gathered = 0;   // region writes the channel gathered from the arena
};

struct Bench {
  NullStore fstore, lstore;
  std::unique_ptr<Channel> follower, leader;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> poller_cpu{0};
  std::thread poller;
  char* arena = nullptr;  // the store's append-only values (region mode)
  size_t arena_bytes = 0;

  explicit Bench(size_t value_len) {
    ChannelOptions o;
    o.transport = TransportKind::tcp;
    o.shards = 1;
    o.ack_mode = AckMode::one;
    o.zero_copy_pool_bytes = 64 << 20;
    o.max_value_bytes = 1 << 20;
    ChannelOptions fo = o;
    fo.role = Role::follower;
    fo.listen = {"127.0.0.1", 0};
    fo.polling = PollingMode::sleep;
    auto f = Channel::create(fo, fstore);
    if (!f.ok()) fail("follower", f.error().message());
    follower = std::move(f).value();
    o.role = Role::leader;
    o.polling = PollingMode::manual;
    o.peers = {{"127.0.0.1", follower->local_endpoint().port}};
    auto l = Channel::create(o, lstore);
    if (!l.ok()) fail("leader", l.error().message());
    leader = std::move(l).value();
    arena_bytes = kArenaSlots * value_len;
    void* a =
        mmap(nullptr, arena_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) fail("mmap", "cannot map the store's arena");
    arena = static_cast<char*>(a);
    std::memset(arena, 0, arena_bytes);  // fault the pages in before measuring
    auto st = leader->register_region(arena, arena_bytes);
    if (!st.ok()) fail("register_region", st.error().message());
    poller = std::thread([this] {
      const uint64_t c0 = thread_cpu_ns();
      while (!stop.load(std::memory_order_relaxed)) {
        if (leader->progress() == 0) std::this_thread::sleep_for(20us);
        poller_cpu.store(thread_cpu_ns() - c0, std::memory_order_relaxed);
      }
    });
  }
  ~Bench() {
    stop = true;
    poller.join();
    leader.reset();  // the channel deregisters the arena before it is unmapped
    munmap(arena, arena_bytes);
  }
  [[noreturn]] static void fail(const char* what, const std::string& why) {
    std::fprintf(stderr, "%s: %s\n", what, why.c_str());
    std::exit(1);
  }

  // `writes` writes, at most kInFlight not yet committed (so the pool never runs dry).
  Sample run(Mode mode, size_t value_len, uint64_t writes) {
    std::string source(value_len, 'v');  // where the store's value comes from
    std::string value(value_len, ' ');   // the copy path's value, reused
    std::vector<Ticket> ring(kInFlight);
    const uint64_t p0 = poller_cpu.load();
    const uint64_t g0 = leader->metrics().region_values_gathered;
    const uint64_t c0 = thread_cpu_ns();
    const auto t0 = std::chrono::steady_clock::now();
    Sample s;
    for (uint64_t i = 0; i < writes; ++i) {
      Ticket& slot = ring[i % kInFlight];
      while (i >= kInFlight && !leader->committed(slot)) std::this_thread::sleep_for(10us);
      std::memcpy(source.data(), &i, sizeof i);
      const std::string_view key = (i & 1) != 0 ? "key-odd" : "key-even";
      WriteResult w;
      memory::Buffer b = mode == kZeroCopy ? leader->allocate(value_len) : memory::Buffer();
      if (mode == kRegion) {
        char* slot_bytes = arena + (i % kArenaSlots) * value_len;
        std::memcpy(slot_bytes, source.data(), value_len);  // the store appends its value
        w = leader->replicate(key, std::string_view(slot_bytes, value_len));
      } else if (b) {
        std::memcpy(b.data(), source.data(), value_len);  // the store fills the Buffer
        w = leader->replicate(key, std::move(b));
      } else {
        if (mode == kZeroCopy) ++s.fallbacks;
        std::memcpy(value.data(), source.data(), value_len);  // the store fills its value
        w = leader->replicate(key, value);
      }
      if (!w.ok()) fail("replicate", std::string(describe(w.status)));
      slot = w.ticket;
    }
    auto st = leader->wait_all_acked(60s);
    if (!st.ok()) fail("wait_all_acked", st.error().message());
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const uint64_t writer = thread_cpu_ns() - c0;
    const uint64_t cpu = writer + (poller_cpu.load() - p0);
    s.cpu_ns_per_write = static_cast<double>(cpu) / static_cast<double>(writes);
    s.writer_ns_per_write = static_cast<double>(writer) / static_cast<double>(writes);
    s.writes_per_s = static_cast<double>(writes) / secs;
    s.gathered = leader->metrics().region_values_gathered - g0;
    return s;
  }
  static constexpr uint64_t kInFlight = 128;
  static constexpr uint64_t kArenaSlots = 4 * kInFlight;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t writes = 20000;
  int rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--writes") == 0) writes = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
  }
  fmt::print(
      "value | mode | leader CPU us/write (median of {} rounds) | of which writer | writes/s | "
      "fallbacks (zero-copy) or gathered (region)\n",
      rounds);
  for (size_t value_len : {size_t{16} << 10, size_t{64} << 10}) {
    Bench b(value_len);
    for (int m = 0; m < kModes; ++m)  // warm up every path and the pool
      (void)b.run(static_cast<Mode>(m), value_len, writes / 4);
    std::vector<double> cpu[kModes], tput[kModes], wcpu[kModes];
    uint64_t extra[kModes] = {};
    for (int r = 0; r < rounds; ++r)
      for (int m = 0; m < kModes; ++m) {
        const Sample s = b.run(static_cast<Mode>(m), value_len, writes);
        cpu[m].push_back(s.cpu_ns_per_write);
        wcpu[m].push_back(s.writer_ns_per_write);
        tput[m].push_back(s.writes_per_s);
        extra[m] += m == kRegion ? s.gathered : s.fallbacks;
      }
    for (int m = 0; m < kModes; ++m)
      fmt::print("{} KiB | {} | {:.2f} | {:.2f} | {:.0f} | {}\n", value_len >> 10, kModeNames[m],
                 median(cpu[m]) / 1000.0, median(wcpu[m]) / 1000.0, median(tput[m]), extra[m]);
    for (int m = kZeroCopy; m < kModes; ++m)
      fmt::print("{} KiB | {} / copy | CPU {:.3f} ({:+.1f}%) | throughput {:.3f}\n",
                 value_len >> 10, kModeNames[m], median(cpu[m]) / median(cpu[kCopy]),
                 (median(cpu[m]) / median(cpu[kCopy]) - 1) * 100,
                 median(tput[m]) / median(tput[kCopy]));
  }
  return 0;
}
