// WAL benchmarks, printed as tables (docs/benchmarks.md, "WAL"):
//   1. append throughput with durability=none next to plain write(2) of the same bytes to
//      the same file system, in the same run, as a ratio; with the file backend (pwritev
//      and io_uring) and the persistent-memory backend (--pmem: forced with libpmem's
//      PMEM_IS_PMEM_FORCE=1 by default, which on a non-DAX file system measures memcpy into
//      the page cache, not persistent memory);
//   2. durability=batch group commit as writer threads grow 1..8: acknowledged records per
//      fdatasync and throughput, next to one write(2)+fdatasync per record;
//   3. recovery speed: records replayed per second from a WAL of --recovery-mib MiB.
// Frames hold replication batches encoded by the product's BatchBuilder (the bytes a channel
// logs, docs/wal_format.md), and recovery checks and walks them as the channel does.
// Every figure is the median of --repeat runs, baseline and WAL interleaved.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/features.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/wal/log.h"
#include "rdmarepl/wal/writer.h"

using namespace rdmarepl;
using namespace rdmarepl::wal;

namespace {

struct Args {
  std::string dir;  // parent of the scratch directory (default: $TMPDIR or /tmp)
  uint64_t append_mib = 48;
  uint64_t batch_bytes = 4096;
  uint64_t segment_mib = 64;
  int max_threads = 8;
  double seconds = 1.0;  // per group-commit configuration
  uint64_t recovery_mib = 64;
  int repeat = 7;
  std::string only;  // "append", "group" or "recovery": run that table alone
  // The pmem column of table 1: "force" (PMEM_IS_PMEM_FORCE=1, so it runs on any file
  // system), "real" (no override: --dir must be on a DAX file system) or "off".
  std::string pmem = RDMAREPL_HAVE_PMEM != 0 ? "force" : "off";
};

// The command line (CLI11); exits with 0 after --help, 2 on bad usage.
Args parse(int argc, char** argv) {
  Args a;
  const char* tmp = std::getenv("TMPDIR");
  a.dir = tmp != nullptr ? tmp : "/tmp";
  CLI::App app{"rdmarepl-bench-wal: WAL append, group-commit and recovery throughput"};
  app.add_option("--dir", a.dir, "parent of the scratch directory")->capture_default_str();
  app.add_option("--append-mib", a.append_mib, "MiB appended per run of table 1")
      ->capture_default_str();
  app.add_option("--batch-bytes", a.batch_bytes, "bytes per appended batch")->capture_default_str();
  app.add_option("--segment-mib", a.segment_mib, "segment size")->capture_default_str();
  app.add_option("--max-threads", a.max_threads, "most writer threads of the group-commit table")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seconds", a.seconds, "seconds per group-commit configuration")
      ->capture_default_str();
  app.add_option("--recovery-mib", a.recovery_mib, "MiB of log read back by the recovery table")
      ->capture_default_str();
  app.add_option("--repeat", a.repeat, "runs per cell (the median is shown)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--only", a.only, "run one table alone")
      ->check(CLI::IsMember({"append", "group", "recovery"}));
  app.add_option("--pmem", a.pmem,
                 "the pmem column of table 1: force (PMEM_IS_PMEM_FORCE=1), real (--dir on a DAX "
                 "file system) or off")
      ->check(CLI::IsMember({"force", "real", "off"}))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e) == 0 ? 0 : 2);
  }
  return a;
}

void die(const std::string& what) {
  std::fprintf(stderr, "rdmarepl-bench-wal: %s\n", what.c_str());
  std::exit(1);
}
template <class T>
T must(Result<T> r) {
  if (!r) die(r.error().to_string());
  return std::move(*r);
}
void must(Status s) {
  if (!s) die(s.error().to_string());
}

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& parent) {
    std::string t = parent + "/rdmarepl-bench-wal-XXXXXX";
    if (::mkdtemp(t.data()) == nullptr) die("mkdtemp in " + parent + " failed");
    path_ = t;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  void clear() {
    for (const auto& e : std::filesystem::directory_iterator(path_)) std::filesystem::remove(e);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One sealed replication batch, as a channel logs it.
struct Batch {
  std::vector<std::byte> buf;
  uint32_t records = 0;
  [[nodiscard]] std::span<const uint8_t> bytes() const noexcept {
    return {reinterpret_cast<const uint8_t*>(buf.data()), buf.size()};
  }
  [[nodiscard]] uint32_t count() const noexcept { return records; }
};

// A batch of records totalling about `bytes` (16-byte keys, 200-byte values, like a small
// KV write), at least one record.
Batch make_batch(uint64_t first_seq, uint64_t bytes) {
  constexpr size_t kKey = 16;
  constexpr size_t kValue = 200;
  Batch b;
  b.buf.resize(std::max<uint64_t>(bytes, replication::single_record_batch_size(kKey, kValue)));
  replication::BatchBuilder bb;
  bb.start(b.buf.data(), b.buf.size(), 0, first_seq);
  while (bb.fits(kKey, kValue)) {
    const uint64_t seq = bb.next_seq();
    char key[kKey + 1];
    std::snprintf(key, sizeof key, "user%012llu", static_cast<unsigned long long>(seq));
    const std::string value(kValue, static_cast<char>('a' + seq % 26));
    bb.add(replication::Op::put, std::string_view(key, kKey), value, wall_ns());
  }
  b.buf.resize(bb.seal());
  b.records = bb.count();
  return b;
}

// ---------------------------------------------------------------- 1. append vs write(2)

// CPU time of the calling thread, split into user and system time: what the loop itself
// costs, without the time it spent descheduled while other processes ran (the development
// machine is shared and loaded).
struct Cpu {
  double user_s = 0;
  double sys_s = 0;
};
Cpu thread_cpu() {
  rusage ru{};
  ::getrusage(RUSAGE_THREAD, &ru);
  const auto sec = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return {sec(ru.ru_utime), sec(ru.ru_stime)};
}

struct Timing {
  double wall_s = 0;
  double user_s = 0;
  double sys_s = 0;
  [[nodiscard]] double cpu_s() const { return user_s + sys_s; }
};

Timing finish(const Stopwatch& sw, const Cpu& start) {
  const Cpu end = thread_cpu();
  return {sw.elapsed_s(), end.user_s - start.user_s, end.sys_s - start.sys_s};
}

// Plain write(2) of the same frame-sized chunks the WAL writes; no sync, like durability=none.
Timing plain_write(const std::string& dir, uint64_t total, uint64_t chunk) {
  std::vector<uint8_t> buf(chunk, 0x5a);
  const std::string path = dir + "/plain.dat";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) die("open " + path);
  const Cpu cpu0 = thread_cpu();
  Stopwatch sw;
  for (uint64_t done = 0; done < total; done += chunk) {
    if (::write(fd, buf.data(), chunk) != static_cast<ssize_t>(chunk)) die("write " + path);
  }
  const Timing t = finish(sw, cpu0);
  ::close(fd);
  ::unlink(path.c_str());
  return t;
}

// The WAL's append loop; `used` receives the submission path the writer really took.
Timing wal_append(const std::string& dir, uint64_t total, const Batch& batch, uint64_t segment_size,
                  Submission submission, Submission* used, Backend backend = Backend::file) {
  auto w = must(Writer::create(dir, 1, 1,
                               {.segment_size = segment_size,
                                .durability = Durability::none,
                                .submission = submission,
                                .backend = backend}));
  *used = w->submission();
  const uint64_t frame = kFrameHeaderSize + batch.bytes().size();
  uint64_t seq = 1;
  const Cpu cpu0 = thread_cpu();
  Stopwatch sw;
  for (uint64_t done = 0; done < total; done += frame) {
    must(w->append(batch.bytes(), seq, seq + batch.count() - 1, batch.count()));
    seq += batch.count();
  }
  const Timing t = finish(sw, cpu0);
  must(w->close());
  return t;
}

void bench_append(const Args& a, ScratchDir& dir) {
  const auto batch = make_batch(1, a.batch_bytes);
  const uint64_t frame = kFrameHeaderSize + batch.bytes().size();
  const uint64_t total = a.append_mib << 20;
  const double mib = static_cast<double>(total) / (1 << 20);
  std::printf(
      "\n1. Append, durability=none, vs write(2) of the same bytes (%llu MiB in %llu-byte "
      "frames, %u records each; %d rounds, medians)\n",
      static_cast<unsigned long long>(a.append_mib), static_cast<unsigned long long>(frame),
      batch.count(), a.repeat);
  const bool pmem = a.pmem != "off";
  if (pmem) {
    std::printf("pmem column: %s\n",
                a.pmem == "force"
                    ? "PMEM_IS_PMEM_FORCE=1; unless --dir is on a DAX file system this is "
                      "memcpy into page-cache pages, NOT persistent memory"
                    : "no override: --dir is on a DAX file system");
  }
  std::printf("%-32s %10s | %10s %6s %6s | %10s %6s %6s", "", "write(2)", "WAL pwrite", "wall",
              "CPU", "io_uring", "wall", "CPU");
  if (pmem) std::printf(" | %10s %6s %6s", "pmem", "wall", "CPU");
  std::printf("\n%-32s %10s | %10s %6s %6s | %10s %6s %6s", "case", "MiB/s", "MiB/s", "ratio",
              "ratio", "MiB/s", "ratio", "ratio");
  if (pmem) std::printf(" | %10s %6s %6s", "MiB/s", "ratio", "ratio");
  std::printf("\n");
  struct Case {
    const char* name;
    uint64_t segment;
  };
  // The first case fits in one segment: the cost of framing alone. The second rotates
  // every 8 MiB, so it also pays each rotation's seal + new preallocated segment.
  const Case cases[] = {
      {"one segment (framing only)", std::max<uint64_t>(a.segment_mib << 20, total + (1 << 20))},
      {"8 MiB segments (with rotations)", 8u << 20}};
  std::string split;
  for (const auto& c : cases) {
    // Each round runs write(2), the WAL with pwritev, the WAL with io_uring (and the WAL
    // with the pmem backend) back to back (rotating which goes first), so that all see
    // the same machine; ratios
    // are taken per round, then the median. Wall ratio: throughput. CPU ratio: write(2)'s
    // thread CPU time over the WAL's for the same bytes, which the load of other
    // processes moves less.
    std::vector<double> base, wal, uring, wall_ratio, cpu_ratio, uring_wall, uring_cpu;
    std::vector<double> pm, pm_wall, pm_cpu;
    std::vector<double> user_ms[4], sys_ms[4];  // write(2), WAL pwrite, io_uring, pmem
    Submission uring_used = Submission::io_uring;
    const int runs = pmem ? 4 : 3;
    for (int r = 0; r < a.repeat; ++r) {
      Timing tb, tw, tu, tp;
      for (int k = 0; k < runs; ++k) {
        Submission used = Submission::pwrite;
        switch ((k + r) % runs) {
          case 0:
            tb = plain_write(dir.path(), total, frame);
            break;
          case 1:
            tw = wal_append(dir.path(), total, batch, c.segment, Submission::pwrite, &used);
            break;
          case 2:
            tu = wal_append(dir.path(), total, batch, c.segment, Submission::io_uring, &used);
            if (used != Submission::io_uring) uring_used = used;
            break;
          default:
            tp = wal_append(dir.path(), total, batch, c.segment, Submission::pwrite, &used,
                            Backend::pmem);
            break;
        }
        dir.clear();
      }
      base.push_back(mib / tb.wall_s);
      wal.push_back(mib / tw.wall_s);
      uring.push_back(mib / tu.wall_s);
      wall_ratio.push_back(tb.wall_s / tw.wall_s);
      cpu_ratio.push_back(tb.cpu_s() / tw.cpu_s());
      uring_wall.push_back(tb.wall_s / tu.wall_s);
      uring_cpu.push_back(tb.cpu_s() / tu.cpu_s());
      if (pmem) {
        pm.push_back(mib / tp.wall_s);
        pm_wall.push_back(tb.wall_s / tp.wall_s);
        pm_cpu.push_back(tb.cpu_s() / tp.cpu_s());
      }
      for (int i = 0; i < runs; ++i) {
        const Timing& t = i == 0 ? tb : i == 1 ? tw : i == 2 ? tu : tp;
        user_ms[i].push_back(t.user_s * 1e3);
        sys_ms[i].push_back(t.sys_s * 1e3);
      }
    }
    std::printf("%-32s %10.0f | %10.0f %6.2f %6.2f | ", c.name, median(base), median(wal),
                median(wall_ratio), median(cpu_ratio));
    if (uring_used == Submission::io_uring) {
      std::printf("%10.0f %6.2f %6.2f", median(uring), median(uring_wall), median(uring_cpu));
    } else {
      std::printf("%10s (io_uring not usable: the writer logged why)", "n/a");
    }
    if (pmem) std::printf(" | %10.0f %6.2f %6.2f", median(pm), median(pm_wall), median(pm_cpu));
    std::printf("\n");
    char line[200];
    std::snprintf(line, sizeof line, "%-32s %5.0f / %-5.0f | %5.0f / %-5.0f | %5.0f / %-5.0f",
                  c.name, median(user_ms[0]), median(sys_ms[0]), median(user_ms[1]),
                  median(sys_ms[1]), median(user_ms[2]), median(sys_ms[2]));
    split += line;
    if (pmem) {
      std::snprintf(line, sizeof line, " | %5.0f / %-5.0f", median(user_ms[3]), median(sys_ms[3]));
      split += line;
    }
    split += "\n";
  }
  // Where the CPU time goes: user space (the WAL's CRC, locking, framing) and kernel (page
  // cache, block allocation), for the whole run of each loop.
  std::printf("\nthread CPU time per run, user / sys ms (medians)\n");
  std::printf("%-32s %13s | %13s | %13s", "case", "write(2)", "WAL pwrite", "io_uring");
  if (pmem) std::printf(" | %13s", "pmem");
  std::printf("\n");
  std::printf("%s", split.c_str());
}

// ---------------------------------------------------------------- 2. group commit

struct GcResult {
  double records_per_s;
  double appends_per_sync;
  double records_per_sync;
};

GcResult group_commit(const std::string& dir, int threads, double seconds, const Batch& batch) {
  auto w =
      must(Writer::create(dir, 1, 1, {.durability = Durability::batch, .backend = Backend::file}));
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> seq{1};
  std::vector<std::thread> ts;
  Stopwatch sw;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        const uint64_t s = seq.fetch_add(batch.count());
        must(w->append(batch.bytes(), s, s + batch.count() - 1, batch.count()));
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : ts) t.join();
  const double s = sw.elapsed_s();
  const auto st = w->stats();
  must(w->close());
  const double syncs = static_cast<double>(std::max<uint64_t>(1, st.syncs));
  return {static_cast<double>(st.records) / s, static_cast<double>(st.appends) / syncs,
          static_cast<double>(st.records) / syncs};
}

// Baseline: one write(2) + fdatasync per append, one thread.
double write_fdatasync_per_s(const std::string& dir, double seconds, uint64_t chunk) {
  std::vector<uint8_t> buf(chunk, 0x5a);
  const std::string path = dir + "/plain.dat";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) die("open " + path);
  uint64_t n = 0;
  Stopwatch sw;
  while (sw.elapsed_s() < seconds) {
    if (::write(fd, buf.data(), chunk) != static_cast<ssize_t>(chunk) || ::fdatasync(fd) != 0)
      die("write/fdatasync " + path);
    ++n;
  }
  const double s = sw.elapsed_s();
  ::close(fd);
  ::unlink(path.c_str());
  return static_cast<double>(n) / s;
}

void bench_group_commit(const Args& a, ScratchDir& dir) {
  // One record per append: the case group commit exists for (many small acknowledged writes).
  const auto batch = make_batch(1, 1);
  const uint64_t frame = kFrameHeaderSize + batch.bytes().size();
  std::printf(
      "\n2. Group commit, durability=batch, one %llu-byte record per append, %.1f s per "
      "row\n",
      static_cast<unsigned long long>(frame), a.seconds);
  const double base = write_fdatasync_per_s(dir.path(), a.seconds, frame);
  dir.clear();
  std::printf("baseline: write(2)+fdatasync per record, 1 thread: %.0f records/s\n", base);
  std::printf("%8s %14s %16s %18s %12s\n", "threads", "records/s", "appends/fdatasync",
              "records/fdatasync", "vs baseline");
  for (int t = 1; t <= a.max_threads; t *= 2) {
    auto r = group_commit(dir.path(), t, a.seconds, batch);
    dir.clear();
    std::printf("%8d %14.0f %16.2f %18.2f %11.2fx\n", t, r.records_per_s, r.appends_per_sync,
                r.records_per_sync, r.records_per_s / base);
  }
}

// ---------------------------------------------------------------- 3. recovery

struct CountingStore final : RecoveryHandler {
  uint64_t records = 0;
  uint64_t bytes = 0;
  Status restore(CheckpointReader&) override { return ok_status(); }
  Status replay(const Frame& f) override {
    // What the channel's recovery does with a frame: check the batch (its CRC and every
    // record's bounds and seq), then walk its records.
    replication::BatchView v;
    const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(f.payload.data()),
                                        f.payload.size());
    if (replication::parse_batch(in, v) != replication::BatchError::ok)
      return Error(Errc::corrupt, "bench: a logged batch failed its check");
    replication::RecordCursor cursor(v);
    replication::Record r;
    while (cursor.next(r)) {
      ++records;
      bytes += r.key.size() + r.value.size();
    }
    return ok_status();
  }
};

// Drops the cached pages of the WAL segments in `dir` (and only those).
void evict_segments(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("open " + e.path().string());
    if (::fdatasync(fd) != 0 || ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
      die("evicting " + e.path().string());
    ::close(fd);
  }
}

void bench_recovery(const Args& a, ScratchDir& dir) {
  const auto batch = make_batch(1, a.batch_bytes);
  const uint64_t frame = kFrameHeaderSize + batch.bytes().size();
  const uint64_t total = a.recovery_mib << 20;
  {
    auto w = must(Writer::create(dir.path(), 1, 1,
                                 {.segment_size = a.segment_mib << 20,
                                  .durability = Durability::none,
                                  .backend = Backend::file}));
    uint64_t seq = 1;
    for (uint64_t done = 0; done < total; done += frame) {
      must(w->append(batch.bytes(), seq, seq + batch.count() - 1, batch.count()));
      seq += batch.count();
    }
    must(w->close());
  }
  std::printf(
      "\n3. Recovery of a %llu MiB WAL (%llu MiB segments, %u records per frame; median of "
      "%d)\n",
      static_cast<unsigned long long>(a.recovery_mib),
      static_cast<unsigned long long>(a.segment_mib), batch.count(), a.repeat);
  std::printf("%-44s %14s %16s %12s\n", "page cache", "records", "records/s", "MiB/s");
  // Warm: the segments are in the page cache (the CPU cost of recovery). Cold: before each
  // open, the segments' own cached pages are dropped (fdatasync + POSIX_FADV_DONTNEED, no
  // other file is touched), so recovery reads them from the disk as after a reboot.
  for (const bool cold : {false, true}) {
    std::vector<double> rates, mibs;
    uint64_t records = 0;
    for (int r = 0; r < a.repeat; ++r) {
      if (cold) evict_segments(dir.path());
      // Each open seals what it found and adds one empty segment: the records replayed stay
      // the same.
      CountingStore store;
      LogOptions o;
      o.writer.segment_size = a.segment_mib << 20;
      o.writer.durability = Durability::none;
      o.writer.backend = Backend::file;
      Stopwatch sw;
      auto log = must(Log::open(dir.path(), o, store));
      const double s = sw.elapsed_s();
      must(log->close());
      records = store.records;
      rates.push_back(static_cast<double>(store.records) / s);
      mibs.push_back(static_cast<double>(total) / (1 << 20) / s);
    }
    std::printf("%-44s %14llu %16.0f %12.0f\n",
                cold ? "cold (segments evicted before each open)" : "warm",
                static_cast<unsigned long long>(records), median(rates), median(mibs));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  // libpmem reads the override once, at its first pmem_is_pmem: set (or clear) it before
  // any writer exists. Every other writer here asks for Backend::file explicitly.
  if (a.pmem == "force") {
    ::setenv("PMEM_IS_PMEM_FORCE", "1", 1);
  } else {
    ::unsetenv("PMEM_IS_PMEM_FORCE");
  }
  ScratchDir dir(a.dir);
  std::printf("rdmarepl-bench-wal: scratch directory %s\n", dir.path().c_str());
  const auto run = [&](const char* table) { return a.only.empty() || a.only == table; };
  if (run("append")) bench_append(a, dir);
  if (run("group")) bench_group_commit(a, dir);
  dir.clear();
  if (run("recovery")) bench_recovery(a, dir);
  return 0;
}
