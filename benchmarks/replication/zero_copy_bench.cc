// Leader CPU per write, copied values against zero-copy values, over TCP on 127.0.0.1.
//
//   copy:      replicate(key, string_view): the value is copied into the retained window.
//   zero-copy: replicate(key, allocate()'d Buffer): the value is sent and checksummed from
//              the Buffer, never copied.
//
// In both modes the writer produces the value the same way, by copying it from a source
// buffer into where the store keeps it (a reused std::string for copy, the pool Buffer for
// zero-copy), so the difference is what the channel does. At most 128 writes are not yet
// committed at a time (the writer sleeps 10 us while the oldest is not), which keeps the
// pool from running dry; "fallbacks" counts zero-copy writes that found it empty anyway.
// One leader, one follower (same process), ack_mode=one, 1 shard. The leader polls manually:
// a poller thread of this program calls progress() and sleeps 20 us when it found no work.
// Leader CPU = CLOCK_THREAD_CPUTIME_ID of the writer thread + of that poller thread (the
// kernel's TCP send copy included: the writer posts, so it runs sendmsg()).
//
// Usage: rdmarepl-bench-zero-copy [--writes N] [--rounds R]  (rounds alternate the modes)
#include <fmt/format.h>
#include <time.h>

#include <CLI/CLI.hpp>
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

struct Sample {
  double cpu_ns_per_write = 0;
  double writer_ns_per_write = 0;  // of which the writer thread
  double writes_per_s = 0;
  uint64_t fallbacks = 0;  // zero-copy writes that found the pool empty and copied
};

struct Bench {
  NullStore fstore, lstore;
  std::unique_ptr<Channel> follower, leader;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> poller_cpu{0};
  std::thread poller;

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
    (void)value_len;
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
  }
  [[noreturn]] static void fail(const char* what, const std::string& why) {
    std::fprintf(stderr, "%s: %s\n", what, why.c_str());
    std::exit(1);
  }

  // `writes` writes, at most kInFlight not yet committed (so the pool never runs dry).
  Sample run(bool zero_copy, size_t value_len, uint64_t writes) {
    std::string source(value_len, 'v');  // where the store's value comes from
    std::string value(value_len, ' ');   // the copy path's value, reused
    std::vector<Ticket> ring(kInFlight);
    const uint64_t p0 = poller_cpu.load();
    const uint64_t c0 = thread_cpu_ns();
    const auto t0 = std::chrono::steady_clock::now();
    Sample s;
    for (uint64_t i = 0; i < writes; ++i) {
      Ticket& slot = ring[i % kInFlight];
      while (i >= kInFlight && !leader->committed(slot)) std::this_thread::sleep_for(10us);
      std::memcpy(source.data(), &i, sizeof i);
      const std::string_view key = (i & 1) != 0 ? "key-odd" : "key-even";
      WriteResult w;
      memory::Buffer b = zero_copy ? leader->allocate(value_len) : memory::Buffer();
      if (b) {
        std::memcpy(b.data(), source.data(), value_len);  // the store fills the Buffer
        w = leader->replicate(key, std::move(b));
      } else {
        if (zero_copy) ++s.fallbacks;
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
    return s;
  }
  static constexpr uint64_t kInFlight = 128;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t writes = 20000;
  int rounds = 5;
  CLI::App app{"rdmarepl-bench-zero-copy: leader CPU per write, copied vs zero-copy values"};
  app.add_option("--writes", writes, "writes per round")->capture_default_str();
  app.add_option("--rounds", rounds, "rounds (the median is shown)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  fmt::print(
      "value | mode | leader CPU us/write (median of {} rounds) | of which writer | writes/s | "
      "fallbacks\n",
      rounds);
  for (size_t value_len : {size_t{16} << 10, size_t{64} << 10}) {
    Bench b(value_len);
    (void)b.run(false, value_len, writes / 4);  // warm up both paths and the pool
    (void)b.run(true, value_len, writes / 4);
    std::vector<double> cpu[2], tput[2], wcpu[2];
    uint64_t fallbacks = 0;
    for (int r = 0; r < rounds; ++r)
      for (int zc = 0; zc < 2; ++zc) {
        const Sample s = b.run(zc == 1, value_len, writes);
        cpu[zc].push_back(s.cpu_ns_per_write);
        wcpu[zc].push_back(s.writer_ns_per_write);
        tput[zc].push_back(s.writes_per_s);
        fallbacks += s.fallbacks;
      }
    for (int zc = 0; zc < 2; ++zc)
      fmt::print("{} KiB | {} | {:.2f} | {:.2f} | {:.0f} | {}\n", value_len >> 10,
                 zc == 1 ? "zero-copy" : "copy", median(cpu[zc]) / 1000.0,
                 median(wcpu[zc]) / 1000.0, median(tput[zc]), zc == 1 ? fallbacks : 0);
    fmt::print("{} KiB | zero-copy / copy | CPU {:.3f} ({:+.1f}%) | throughput {:.3f}\n",
               value_len >> 10, median(cpu[1]) / median(cpu[0]),
               (median(cpu[1]) / median(cpu[0]) - 1) * 100, median(tput[1]) / median(tput[0]));
  }
  return 0;
}
