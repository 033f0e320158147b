// rocksdb_bench: RocksDB alone against RocksDB replicated to two followers (ack=all, TCP on
// loopback, followers in this process with databases of their own), same RocksDB options
// (WAL on, no sync). Single puts and batches of --batch-records records, 1 KiB values.
// Prints throughput and p99 latency of each (alone: the RocksDB write; replicated: from the
// leader's local write to the commit, both followers having applied it), and the ratio.
//   rocksdb_bench --dir /tmp/rb --writes 50000
#include <fmt/format.h>
#include <rocksdb/write_batch.h>
#include <CLI/CLI.hpp>

#include <sys/resource.h>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/enum_text.h"
#include "rocksdb_store.h"

using namespace std::chrono_literals;
using rocksrepl::RocksDbStore;
using Channel = rdmarepl::ReplicationChannel<RocksDbStore>;

namespace {

struct Result {
  double per_sec = 0;
  double p99_us = 0;
  double cpu_us = 0;  // CPU time of the whole process (every thread) per write
};

// CPU time (user + system) of this process so far, in microseconds.
double cpu_now_us() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto us = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e6 + t.tv_usec; };
  return us(u.ru_utime) + us(u.ru_stime);
}

// Replicated writes outstanding (not yet committed) at most.
constexpr uint64_t kWindow = 256;

struct Slot {
  uint64_t t0 = 0;
  uint64_t ns = 0;
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
  const double c0 = cpu_now_us();
  for (uint64_t i = 0; i < writes; ++i) {
    lat[i].t0 = rdmarepl::mono_ns();
    local_write(db, i, records, value);
    lat[i].ns = rdmarepl::mono_ns() - lat[i].t0;
  }
  const double s = static_cast<double>(rdmarepl::mono_ns() - t0) / 1e9;
  return {static_cast<double>(writes) / s, p99(lat),
          (cpu_now_us() - c0) / static_cast<double>(writes)};
}

void on_commit(void* ctx, rdmarepl::Ticket, const rdmarepl::Status&) noexcept {
  auto* slot = static_cast<Slot*>(ctx);
  slot->ns = rdmarepl::mono_ns() - slot->t0;
}

Result run_replicated(rocksdb::DB& db, Channel& ch, uint64_t writes, size_t records,
                      const std::string& value) {
  const bool manual = ch.options().polling == rdmarepl::PollingMode::manual;
  std::vector<Slot> lat(writes);
  std::vector<std::string> keys(records);
  std::vector<rdmarepl::GroupOp> ops(records);
  const uint64_t t0 = rdmarepl::mono_ns();
  std::vector<rdmarepl::Ticket> tickets(writes);
  const double c0 = cpu_now_us();
  for (uint64_t i = 0; i < writes; ++i) {
    // At most kWindow writes outstanding: latency is measured below saturation's queue.
    // (Polls committed() rather than wait(), which would also seal the open batch early.)
    while (i >= kWindow && !ch.committed(tickets[i - kWindow]))
      if (!manual || ch.progress() == 0) std::this_thread::sleep_for(10us);
    lat[i].t0 = rdmarepl::mono_ns();
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
    tickets[i] = w.ticket;
    if (manual) (void)ch.progress();  // no poller thread: the writer drives the channel
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
  return {static_cast<double>(writes) / s, p99(lat),
          (cpu_now_us() - c0) / static_cast<double>(writes)};
}

std::unique_ptr<RocksDbStore> fresh(const std::string& path) {
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  auto s = RocksDbStore::open(path, 1);
  if (!s) RocksDbStore::die(rocksdb::Status::IOError(), s.error().message());
  return std::move(s).value();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rocksdb_bench: RocksDB alone vs replicated to two followers (ack=all, TCP)"};
  std::string dir = "/tmp/rocksdb_bench";
  uint64_t writes = 50000;
  size_t value_bytes = 1024, batch_records = 16;
  app.add_option("--dir", dir, "scratch directory (emptied)");
  app.add_option("--writes", writes, "single puts per run (batches: writes / batch-records)");
  app.add_option("--value-bytes", value_bytes, "value size");
  app.add_option("--batch-records", batch_records, "records per WriteBatch / group");
  std::string polling = "blocking", leader_polling = "manual", wal_dir;
  app.add_option("--wal-dir", wal_dir,
                 "the leader's write-ahead log (emptied; durability none), as rocksdb_node "
                 "runs it; none by default");
  app.add_option("--polling", polling, "the followers' poller: busy, sleep or blocking");
  app.add_option("--leader-polling", leader_polling,
                 "the leader's: manual (the writing thread drives it), busy, sleep, blocking");
  CLI11_PARSE(app, argc, argv);
  const std::string value(value_bytes, 'v');
  const uint64_t batches = std::max<uint64_t>(1, writes / batch_records);

  auto alone = fresh(dir + "/alone");
  const Result a1 = run_alone(alone->db(), writes, 1, value);
  const Result a16 = run_alone(alone->db(), batches, batch_records, value);
  alone.reset();

  rdmarepl::ChannelOptions o;
  o.shards = 1;
  o.transport = rdmarepl::TransportKind::tcp;
  auto mode = rdmarepl::from_string<rdmarepl::PollingMode>(polling);
  if (!mode) RocksDbStore::die(rocksdb::Status::InvalidArgument(), "--polling " + polling);
  o.polling = *mode;
  o.ring_bytes = 16 << 20;
  o.retain_bytes = 128 << 20;
  o.max_value_bytes = 1 << 20;
  auto f1s = fresh(dir + "/f1"), f2s = fresh(dir + "/f2"), ls = fresh(dir + "/leader");
  o.role = rdmarepl::Role::follower;
  o.listen = {"127.0.0.1", 0};
  auto f1 = Channel::create(o, *f1s);
  auto f2 = Channel::create(o, *f2s);
  if (!f1 || !f2) RocksDbStore::die(rocksdb::Status::IOError(), "follower channel");
  o.role = rdmarepl::Role::leader;
  o.ack_mode = rdmarepl::AckMode::all;
  auto lmode = rdmarepl::from_string<rdmarepl::PollingMode>(leader_polling);
  if (!lmode) RocksDbStore::die(rocksdb::Status::InvalidArgument(), "--leader-polling");
  o.polling = *lmode;
  if (!wal_dir.empty()) {
    std::filesystem::remove_all(wal_dir);
    std::filesystem::create_directories(wal_dir);
    o.wal_dir = wal_dir;
    o.durability = rdmarepl::replication::Durability::none;
  }
  o.peers = {(*f1)->local_endpoint(), (*f2)->local_endpoint()};
  auto leader = Channel::create(o, *ls);
  if (!leader) RocksDbStore::die(rocksdb::Status::IOError(), leader.error().message());
  const Result r1 = run_replicated(ls->db(), **leader, writes, 1, value);
  const Result r16 = run_replicated(ls->db(), **leader, batches, batch_records, value);

  auto line = [&](const char* what, uint64_t n, size_t recs, const Result& al, const Result& re) {
    fmt::print(
        "{:<18} {:>6} writes  alone {:>6.0f}/s p99 {:>6.0f} us cpu {:>5.1f} us  replicated "
        "{:>6.0f}/s p99 {:>8.0f} us cpu {:>6.1f} us  ratio {:.2f}  ({:.0f} vs {:.0f} MB/s)\n",
        what, n, al.per_sec, al.p99_us, al.cpu_us, re.per_sec, re.p99_us, re.cpu_us,
        re.per_sec / al.per_sec, al.per_sec * static_cast<double>(recs * value_bytes) / 1e6,
        re.per_sec * static_cast<double>(recs * value_bytes) / 1e6);
  };
  line("single puts", writes, 1, a1, r1);
  line(fmt::format("{}-record batches", batch_records).c_str(), batches, batch_records, a16, r16);
  return 0;
}
