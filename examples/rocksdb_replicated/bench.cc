// rocksdb_bench: RocksDB alone against RocksDB replicated to two followers (ack=all, TCP on
// loopback, followers in this process with databases of their own), same RocksDB options
// (WAL on, no sync). Single puts and batches of --batch-records records, 1 KiB values.
// Followers apply a WriteBatch per replication batch (RocksDbStore::apply_batch) or per record
// and group (--follower-apply).
// Prints throughput and p99 latency of each (alone: the RocksDB write; replicated: from the
// leader's local write to the commit, both followers having applied it), and the ratio.
//   rocksdb_bench --dir /tmp/rb --writes 50000
#include <fmt/format.h>
#include <rocksdb/write_batch.h>
#include <CLI/CLI.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/enum_text.h"
#include "rocksdb_store.h"

using namespace std::chrono_literals;
using rocksrepl::RocksDbStore;
using Channel = rdmarepl::ReplicationChannel<RocksDbStore>;

namespace {

// CPU time (user + system) so far, in microseconds: of the whole process, and split by who
// spent it, from /proc/self/task/<tid>/stat and the threads' names (the library names its
// threads "rrL-..." on a leader and "rrF-..." on a follower).
struct Cpu {
  double total = 0;
  double leader = 0;     // the writing thread (it also drives the leader) and rrL-* threads
  double followers = 0;  // rrF-* threads: both followers' channels and their stores' applies
  // The rest is other threads: RocksDB's flushes and compactions of every database.
};

double ticks_to_us(double ticks) {
  static const double per_sec = static_cast<double>(sysconf(_SC_CLK_TCK));
  return ticks * 1e6 / per_sec;
}

Cpu cpu_now() {
  Cpu c;
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto us = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e6 + t.tv_usec; };
  c.total = us(u.ru_utime) + us(u.ru_stime);
  const auto main_tid = std::to_string(getpid());
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm_file(e.path() / "comm"), stat_file(e.path() / "stat");
    std::string comm, stat;
    std::getline(comm_file, comm);
    std::getline(stat_file, stat);
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;  // the thread ended meanwhile
    // After "pid (comm)": state is field 3; utime and stime are fields 14 and 15.
    std::istringstream fields(stat.substr(close + 2));
    std::string skip;
    for (int f = 3; f < 14; ++f) fields >> skip;
    double utime = 0, stime = 0;
    fields >> utime >> stime;
    const double t = ticks_to_us(utime + stime);
    if (e.path().filename() == main_tid || comm.starts_with("rrL-")) c.leader += t;
    if (comm.starts_with("rrF-")) c.followers += t;
  }
  return c;
}

struct Result {
  double per_sec = 0;
  double p99_us = 0;
  Cpu cpu;                       // per write
  double records_per_batch = 0;  // replicated runs: records over the leader's batches
};

Cpu per_write(const Cpu& before, uint64_t writes) {
  const Cpu after = cpu_now();
  const auto n = static_cast<double>(writes);
  return {(after.total - before.total) / n, (after.leader - before.leader) / n,
          (after.followers - before.followers) / n};
}

// Replicated writes outstanding (not yet committed) at most.
constexpr uint64_t kWindow = 256;

// Commits seen, and a writer that may be waiting for one (a poller thread calls on_commit;
// with manual polling the writer does, inside progress()).
struct Commits {
  std::atomic<uint64_t> done{0};
  std::atomic<bool> waiting{false};
  std::mutex mu;
  std::condition_variable cv;

  void add() {
    done.fetch_add(1, std::memory_order_release);
    if (waiting.load(std::memory_order_acquire)) {
      std::lock_guard lock(mu);
      cv.notify_one();
    }
  }
  // Until `n` writes have committed.
  void wait_for(uint64_t n) {
    if (done.load(std::memory_order_acquire) >= n) return;
    std::unique_lock lock(mu);
    waiting.store(true, std::memory_order_seq_cst);
    cv.wait_for(lock, std::chrono::milliseconds(1),
                [&] { return done.load(std::memory_order_acquire) >= n; });
    waiting.store(false, std::memory_order_relaxed);
  }
};

struct Slot {
  uint64_t t0 = 0;
  uint64_t ns = 0;
  Commits* commits = nullptr;
};

double p99(std::vector<Slot>& s) {
  std::vector<uint64_t> v;
  v.reserve(s.size());
  for (auto& x : s) v.push_back(x.ns);
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : static_cast<double>(v[v.size() * 99 / 100]) / 1e3;
}

std::string key_of(uint64_t i) {
  return fmt::format("key/{:012}", (i * 7919) % 1000003);
}

// One write of `records` records (1: a Put; more: a WriteBatch) to `db`.
void local_write(rocksdb::DB& db, uint64_t i, size_t records, const std::string& value) {
  rocksdb::WriteOptions wo;  // WAL on, no sync
  rocksdb::WriteBatch wb;
  for (size_t r = 0; r < records; ++r) (void)wb.Put(key_of(i * records + r), value);
  const auto st = db.Write(wo, &wb);
  if (!st.ok()) RocksDbStore::die(st, "writing");
}

Result run_alone(rocksdb::DB& db, uint64_t writes, size_t records, const std::string& value) {
  std::vector<Slot> lat(writes);
  const uint64_t t0 = rdmarepl::mono_ns();
  const Cpu c0 = cpu_now();
  for (uint64_t i = 0; i < writes; ++i) {
    lat[i].t0 = rdmarepl::mono_ns();
    local_write(db, i, records, value);
    lat[i].ns = rdmarepl::mono_ns() - lat[i].t0;
  }
  const double s = static_cast<double>(rdmarepl::mono_ns() - t0) / 1e9;
  return {static_cast<double>(writes) / s, p99(lat), per_write(c0, writes)};
}

void on_commit(void* ctx, rdmarepl::Ticket, const rdmarepl::Status&) noexcept {
  auto* slot = static_cast<Slot*>(ctx);
  slot->ns = rdmarepl::mono_ns() - slot->t0;
  if (slot->commits != nullptr) slot->commits->add();
}

Result run_replicated(rocksdb::DB& db, Channel& ch, uint64_t writes, size_t records,
                      const std::string& value, uint64_t progress_every) {
  const bool manual = ch.options().polling == rdmarepl::PollingMode::manual;
  std::vector<Slot> lat(writes);
  Commits commits;
  std::vector<std::string> keys(records);
  std::vector<rdmarepl::GroupOp> ops(records);
  const uint64_t t0 = rdmarepl::mono_ns();
  const Cpu c0 = cpu_now();
  const uint64_t batches0 = ch.metrics().batches_sealed;
  for (uint64_t i = 0; i < writes; ++i) {
    // At most kWindow writes outstanding: latency is measured below saturation's queue.
    // (Counts commit callbacks rather than calling wait(), which would also seal the open
    // batch early.)
    while (i >= kWindow && commits.done.load(std::memory_order_acquire) < i - kWindow + 1) {
      if (!manual)
        commits.wait_for(i - kWindow + 1);
      else if (ch.progress() == 0)
        std::this_thread::sleep_for(10us);
    }
    lat[i].t0 = rdmarepl::mono_ns();
    lat[i].commits = &commits;
    local_write(db, i, records, value);
    for (size_t r = 0; r < records; ++r) {
      keys[r] = key_of(i * records + r);
      ops[r] = {rdmarepl::Op::put, keys[r], value};
    }
    rdmarepl::WriteResult w;
    do {
      w = records == 1 ? ch.replicate(keys[0], value) : ch.replicate_group(ops);
    } while (w.status == rdmarepl::WriteStatus::stalled);
    if (!w.ok()) RocksDbStore::die(rocksdb::Status::Aborted(), describe(w.status));
    // No poller thread: the writer drives the channel, every progress_every writes.
    if (manual && i % progress_every == 0) (void)ch.progress();
    if (!ch.on_commit(w.ticket, &on_commit, &lat[i])) {  // too many pending: wait for it
      if (!ch.wait(w.ticket, 60s)) RocksDbStore::die(rocksdb::Status::TimedOut(), "waiting");
      on_commit(&lat[i], w.ticket, rdmarepl::ok_status());
    }
  }
  ch.flush();
  if (!ch.wait_all_acked(120s)) RocksDbStore::die(rocksdb::Status::TimedOut(), "waiting");
  while (ch.progress() != 0) {  // the last callbacks
  }
  const double s = static_cast<double>(rdmarepl::mono_ns() - t0) / 1e9;
  const auto batches = static_cast<double>(ch.metrics().batches_sealed - batches0);
  return {static_cast<double>(writes) / s, p99(lat), per_write(c0, writes),
          static_cast<double>(writes * records) / std::max(1.0, batches)};
}

// A follower store that applies record by record (and group by group): RocksDbStore without
// its apply_batch() hook, to measure what that hook saves.
class PerRecordStore {
 public:
  explicit PerRecordStore(RocksDbStore& s) : s_(s) {}
  void apply(const rdmarepl::Record& r) { s_.apply(r); }
  void apply_group(const rdmarepl::RecordGroup& g) { s_.apply_group(g); }
  [[nodiscard]] uint64_t durable_seq(uint32_t shard) const { return s_.durable_seq(shard); }

 private:
  RocksDbStore& s_;
};
static_assert(!rdmarepl::BatchStore<PerRecordStore>);

// RocksDbStore's hooks as a follower channel uses them: a WriteBatch per replication batch.
class BatchApplyStore : public PerRecordStore {
 public:
  explicit BatchApplyStore(RocksDbStore& s) : PerRecordStore(s), s_(s) {}
  void apply_batch(const rdmarepl::RecordGroup& records) { s_.apply_batch(records); }

 private:
  RocksDbStore& s_;
};
static_assert(rdmarepl::BatchStore<BatchApplyStore> && rdmarepl::BatchStore<RocksDbStore>);

std::unique_ptr<RocksDbStore> fresh(const std::string& path) {
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  auto s = RocksDbStore::open(path, 1);
  if (!s) RocksDbStore::die(rocksdb::Status::IOError(), s.error().message());
  return std::move(s).value();
}

struct Options {
  std::string dir = "/tmp/rocksdb_bench";
  uint64_t writes = 50000;
  size_t value_bytes = 1024;
  size_t batch_records = 16;
  std::string polling = "blocking";
  std::string leader_polling = "manual";
  std::string wal_dir;
  std::string follower_apply = "both";
  unsigned rounds = 1;
  uint32_t flush_delay_us = 200;
  size_t batch_bytes = 64 * 1024;
  uint64_t progress_every = 1;
};

struct Runs {
  Result puts;
  Result batches;
};

Runs run_alone_both(const Options& a, const std::string& value) {
  auto alone = fresh(a.dir + "/alone");
  Runs r;
  r.puts = run_alone(alone->db(), a.writes, 1, value);
  r.batches = run_alone(alone->db(), std::max<uint64_t>(1, a.writes / a.batch_records),
                        a.batch_records, value);
  return r;
}

// Replicates both workloads to two followers whose channels apply to `F` stores (RocksDbStore:
// a WriteBatch per replication batch; PerRecordStore: per record and group).
template <class F>
Runs run_replicated_both(const Options& a, const std::string& value) {
  rdmarepl::ChannelOptions o;
  o.shards = 1;
  o.transport = rdmarepl::TransportKind::tcp;
  auto mode = rdmarepl::from_string<rdmarepl::PollingMode>(a.polling);
  if (!mode) RocksDbStore::die(rocksdb::Status::InvalidArgument(), "--polling " + a.polling);
  o.polling = *mode;
  o.ring_bytes = 16 << 20;
  o.flush_delay = std::chrono::microseconds(a.flush_delay_us);
  o.batch_bytes = a.batch_bytes;
  o.retain_bytes = 128 << 20;
  o.max_value_bytes = 1 << 20;
  auto f1s = fresh(a.dir + "/f1"), f2s = fresh(a.dir + "/f2"), ls = fresh(a.dir + "/leader");
  F f1store(*f1s), f2store(*f2s);
  o.role = rdmarepl::Role::follower;
  o.listen = {"127.0.0.1", 0};
  auto f1 = rdmarepl::ReplicationChannel<F>::create(o, f1store);
  auto f2 = rdmarepl::ReplicationChannel<F>::create(o, f2store);
  if (!f1 || !f2) RocksDbStore::die(rocksdb::Status::IOError(), "follower channel");
  o.role = rdmarepl::Role::leader;
  o.ack_mode = rdmarepl::AckMode::all;
  auto lmode = rdmarepl::from_string<rdmarepl::PollingMode>(a.leader_polling);
  if (!lmode) RocksDbStore::die(rocksdb::Status::InvalidArgument(), "--leader-polling");
  o.polling = *lmode;
  if (!a.wal_dir.empty()) {
    std::filesystem::remove_all(a.wal_dir);
    std::filesystem::create_directories(a.wal_dir);
    o.wal_dir = a.wal_dir;
    o.durability = rdmarepl::replication::Durability::none;
  }
  o.peers = {(*f1)->local_endpoint(), (*f2)->local_endpoint()};
  auto leader = Channel::create(o, *ls);
  if (!leader) RocksDbStore::die(rocksdb::Status::IOError(), leader.error().message());
  Runs r;
  r.puts = run_replicated(ls->db(), **leader, a.writes, 1, value, a.progress_every);
  r.batches = run_replicated(ls->db(), **leader, std::max<uint64_t>(1, a.writes / a.batch_records),
                             a.batch_records, value, a.progress_every);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rocksdb_bench: RocksDB alone vs replicated to two followers (ack=all, TCP)"};
  Options a;
  app.add_option("--dir", a.dir, "scratch directory (emptied)");
  app.add_option("--writes", a.writes, "single puts per run (batches: writes / batch-records)");
  app.add_option("--value-bytes", a.value_bytes, "value size");
  app.add_option("--batch-records", a.batch_records, "records per WriteBatch / group");
  app.add_option("--wal-dir", a.wal_dir,
                 "the leader's write-ahead log (emptied; durability none), as rocksdb_node "
                 "runs it; none by default");
  app.add_option("--polling", a.polling, "the followers' poller: busy, sleep or blocking");
  app.add_option("--leader-polling", a.leader_polling,
                 "the leader's: manual (the writing thread drives it), busy, sleep, blocking");
  app.add_option("--follower-apply", a.follower_apply,
                 "how followers apply: batch (one WriteBatch per replication batch), record "
                 "(one per record or group) or both (default), one after the other")
      ->check(CLI::IsMember({"batch", "record", "both"}));
  app.add_option("--flush-delay-us", a.flush_delay_us,
                 "the leader's flush delay: a batch is sent when its first record is this old "
                 "(default 200, the channel's default)");
  app.add_option("--batch-bytes", a.batch_bytes,
                 "the leader's batch size (default 65536, the channel's default)");
  app.add_option("--progress-every", a.progress_every,
                 "with --leader-polling manual, the writer calls progress() after every Nth "
                 "write (default 1; each call reads every follower's socket once)")
      ->check(CLI::PositiveNumber);
  app.add_option("--rounds", a.rounds, "repeat everything this many times (default 1)");
  CLI11_PARSE(app, argc, argv);
  const std::string value(a.value_bytes, 'v');
  const uint64_t batches = std::max<uint64_t>(1, a.writes / a.batch_records);

  auto line = [&](const std::string& what, uint64_t n, size_t recs, const Result& al,
                  const Result& re) {
    fmt::print(
        "{:<30} {:>6} writes  alone {:>6.0f}/s p99 {:>6.0f} us cpu {:>5.1f} us  replicated "
        "{:>6.0f}/s p99 {:>8.0f} us cpu {:>6.1f} us  ratio {:.2f}  ({:.0f} vs {:.0f} MB/s)\n",
        what, n, al.per_sec, al.p99_us, al.cpu.total, re.per_sec, re.p99_us, re.cpu.total,
        re.per_sec / al.per_sec, al.per_sec * static_cast<double>(recs * a.value_bytes) / 1e6,
        re.per_sec * static_cast<double>(recs * a.value_bytes) / 1e6);
    // Where the replicated run's CPU went, per write. "leader / alone" is the writing
    // thread's cost alone over the leader's: the ratio a leader with a core to itself would
    // keep if its followers ran on machines of their own.
    fmt::print(
        "{:<30} cpu per write: alone's writer {:.1f} us; replicated: leader {:.1f} us, "
        "followers {:.1f} us (both), other {:.1f} us; leader / alone {:.2f}; {:.1f} records "
        "per batch\n",
        "", al.cpu.leader, re.cpu.leader, re.cpu.followers,
        re.cpu.total - re.cpu.leader - re.cpu.followers, al.cpu.leader / re.cpu.leader,
        re.records_per_batch);
    std::fflush(stdout);
  };
  auto report = [&](const char* how, const Runs& alone, const Runs& rep) {
    line(fmt::format("single puts, {}", how), a.writes, 1, alone.puts, rep.puts);
    line(fmt::format("{}-record batches, {}", a.batch_records, how), batches, a.batch_records,
         alone.batches, rep.batches);
  };
  for (unsigned round = 0; round < std::max(1u, a.rounds); ++round) {
    const Runs alone = run_alone_both(a, value);
    if (a.follower_apply != "record")
      report("batch apply", alone, run_replicated_both<BatchApplyStore>(a, value));
    if (a.follower_apply != "batch")
      report("record apply", alone, run_replicated_both<PerRecordStore>(a, value));
  }
  return 0;
}
