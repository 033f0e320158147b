// The pieces the demo and the bench rely on for their verdicts: the store digest, the
// workload's reproducibility, flag parsing, the latency percentiles and the read check.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "flags.h"
#include "kv_store.h"
#include "latency.h"
#include "metrics_text.h"
#include "read_check.h"
#include "run_config.h"
#include "workload.h"

using namespace rdmarepl;
using namespace rdmarepl::kvdemo;

TEST_CASE("digest does not depend on the order in which the store was filled") {
  KvStore a, b;
  a.put("k1", "v1");
  a.put("k2", "v2");
  a.put("k3", "old");
  a.put("k3", "v3");
  b.put("k3", "v3");
  b.put("k2", "v2");
  b.put("k4", "gone");
  b.erase("k4");
  b.put("k1", "v1");
  CHECK(a.digest() == b.digest());
  CHECK(a.digest().entries == 3);
}

TEST_CASE("digest changes with any value, key, or a byte moved between key and value") {
  KvStore base;
  base.put("key", "value");
  KvStore other_value;
  other_value.put("key", "valuf");
  KvStore other_key;
  other_key.put("kez", "value");
  KvStore moved;
  moved.put("keyv", "alue");
  CHECK_FALSE(base.digest() == other_value.digest());
  CHECK_FALSE(base.digest() == other_key.digest());
  CHECK_FALSE(base.digest() == moved.digest());
  // Two equal entries under different keys must not cancel out (they would with XOR).
  KvStore two;
  two.put("a", "x");
  two.put("b", "x");
  KvStore none;
  CHECK_FALSE(two.digest().sum == none.digest().sum);
}

TEST_CASE("digest text round-trips") {
  KvStore s;
  s.put("a", "b");
  Digest d = s.digest();
  Digest back;
  REQUIRE(Digest::parse(d.to_string(), back));
  CHECK(back == d);
  CHECK_FALSE(Digest::parse("nonsense", back));
}

TEST_CASE("store applies replicated puts and erases") {
  KvStore s;
  replication::Record r;
  r.op = replication::Op::put;
  r.key = "k";
  r.value = "v";
  s.apply(r);
  std::string out;
  REQUIRE(s.get("k", out));
  CHECK(out == "v");
  r.op = replication::Op::erase;
  r.value = {};
  s.apply(r);
  CHECK_FALSE(s.get("k", out));
  CHECK(s.size() == 0);
  CHECK(s.bytes() == 0);
}

TEST_CASE("a digest-only store gives the full store's digest through puts, overwrites, erases") {
  // No reserve(): the table grows from its smallest size, and with a small keyspace and many
  // erases its probe runs are long, so erase's backward shift is exercised on every size.
  WorkloadSpec spec;
  spec.records = 20000;
  spec.key_size = 12;
  spec.value_min = 0;
  spec.value_max = 64;
  spec.keyspace = 3000;
  spec.erase_percent = 30;
  Workload w(spec);
  KvStore full(KvStore::Mode::kFull);
  KvStore digest(KvStore::Mode::kDigestOnly);
  for (uint64_t i = 0; i < spec.records; ++i) {
    Operation op = w.next();
    if (op.erase) {
      full.erase(op.key);
      digest.erase(op.key);
    } else {
      full.put(op.key, op.value);
      digest.put(op.key, op.value);
    }
    if (i % 997 == 0) REQUIRE(digest.digest() == full.digest());
  }
  CHECK(digest.digest() == full.digest());
  CHECK(digest.size() == full.size());
  CHECK(full.size() > 1000);  // the keyspace was mostly filled, not emptied by the erases
  // Erasing every key empties the table and its sum.
  for (uint64_t k = 0; k < spec.keyspace; ++k) {
    std::string key = fmt::format("k{:011}", k);
    full.erase(key);
    digest.erase(key);
  }
  CHECK(full.size() == 0);
  CHECK(digest.size() == 0);
  CHECK(digest.digest() == Digest{});
  // A reserved table takes the same entries.
  KvStore reserved(KvStore::Mode::kDigestOnly);
  reserved.reserve(100000);
  KvStore grown(KvStore::Mode::kDigestOnly);
  for (int i = 0; i < 5000; ++i) {
    std::string key = "key" + std::to_string(i);
    reserved.put(key, key);
    grown.put(key, key);
  }
  CHECK(reserved.digest() == grown.digest());
  CHECK(reserved.digest().entries == 5000);
}

TEST_CASE("the workload is reproducible from its seed and honours its sizes") {
  WorkloadSpec spec;
  spec.records = 2000;
  spec.key_size = 16;
  spec.value_min = 10;
  spec.value_max = 300;
  spec.erase_percent = 5;
  Workload a(spec), b(spec);
  spec.seed = 43;
  Workload c(spec);
  size_t erases = 0, differ = 0;
  std::set<size_t> sizes;
  for (int i = 0; i < 2000; ++i) {
    Operation x = a.next(), y = b.next(), z = c.next();
    REQUIRE(x.key == y.key);
    REQUIRE(x.value == y.value);
    REQUIRE(x.erase == y.erase);
    REQUIRE(x.key.size() == 16);
    if (x.erase) {
      ++erases;
    } else {
      REQUIRE(x.value.size() >= 10);
      REQUIRE(x.value.size() <= 300);
      sizes.insert(x.value.size());
    }
    if (x.key != z.key) ++differ;
  }
  CHECK(erases > 20);  // 5% of 2000 is 100; far from 0
  CHECK(erases < 250);
  CHECK(sizes.size() > 100);  // mixed sizes, not one
  CHECK(differ > 1900);       // another seed gives another sequence
}

TEST_CASE("flags: values, switches, suffixes, ranges and errors") {
  const char* argv[] = {"prog",      "--records", "20k",   "--value-size=16-1024",
                        "--no-kill", "--compare", "redis", "--compare",
                        "tcp-stream"};
  auto f = Flags::parse(9, const_cast<char**>(argv), {"no-kill"});
  REQUIRE(f.ok());
  CHECK(f->get_u64("records", 0).value() == 20000);
  CHECK(f->has("no-kill"));
  CHECK(f->get_all("compare") == std::vector<std::string>{"redis", "tcp-stream"});
  auto r = parse_range(f->get("value-size"), "--value-size");
  REQUIRE(r.ok());
  CHECK(r->first == 16);
  CHECK(r->second == 1024);
  CHECK_FALSE(parse_range("20-10", "x").ok());
  CHECK_FALSE(parse_count("12q", "x").ok());
  CHECK(parse_count("4KiB", "x").value() == 4096);
  CHECK(f->unknown({"records", "value-size", "no-kill"}) == std::vector<std::string>{"--compare"});
  const char* bad[] = {"prog", "--records"};
  CHECK_FALSE(Flags::parse(2, const_cast<char**>(bad), {}).ok());
}

TEST_CASE("latency percentiles are nearest-rank over every sample") {
  LatencyRecorder rec;
  for (uint64_t i = 1; i <= 1000; ++i) rec.record(i * 1000);  // 1..1000 us
  auto s = rec.summarize();
  CHECK(s.count == 1000);
  CHECK(s.p50_us == Approx(500));
  CHECK(s.p99_us == Approx(990));
  CHECK(s.p999_us == Approx(999));
  CHECK(s.max_us == Approx(1000));
  CHECK(s.avg_us == Approx(500.5));
  LatencySummary back;
  REQUIRE(LatencySummary::from_wire(s.to_wire(), back));
  CHECK(back.p999_us == Approx(999));
}

TEST_CASE("metrics travel on a control line and into JSON, one key per table field") {
  rdmarepl::replication::MetricsSnapshot m;
  uint64_t v = 1;
  for (const auto& f : rdmarepl::replication::kMetricFields) m.*f.member = v++ * 1000;
  const std::string line = "done n=5 " + metrics_to_wire(m) + " p50=1.0";
  auto back = metrics_from_wire(line);
  REQUIRE(back.ok());
  for (const auto& f : rdmarepl::replication::kMetricFields) {
    INFO(f.name);
    CHECK((*back).*f.member == m.*f.member);
    CHECK(nlohmann::json::parse(metrics_to_json(m)).at(std::string(f.name)).get<double>() ==
          Approx(static_cast<double>(m.*f.member)));
  }
  uint64_t reconnects = 0;  // its value above: 1000 times its place in the table
  for (size_t i = 0; i < std::size(rdmarepl::replication::kMetricFields); ++i)
    if (rdmarepl::replication::kMetricFields[i].name == std::string_view("reconnects"))
      reconnects = (i + 1) * 1000;
  CHECK(line.find(fmt::format("reconnects={}", reconnects)) != std::string::npos);

  auto missing = metrics_from_wire("done n=5 records_replicated=3");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message(), Catch::Contains("bytes_replicated"));
}

TEST_CASE("the read check counts every follower answer that differs from the leader's store") {
  using rdmarepl::kvdemo::check_reads;
  RunConfig config;
  config.transport = replication::TransportKind::tcp;
  config.workload.records = 8;
  config.workload.key_size = 16;
  KvStore follower_store;
  auto channel = replication::ReplicationChannel<KvStore>::create(follower_options(config, 0, 0),
                                                                  follower_store);
  REQUIRE(channel.ok());
  auto server = rdmarepl::kvdemo::start_read_server(**channel, follower_store);
  REQUIRE(server.ok());
  const std::string where = "127.0.0.1:" + std::to_string((*server)->local_endpoint().port);

  // The sample is the 8 keys k0..k7 of the key space. The leader holds all eight; the
  // follower lacks k1, holds another value for k2 and a key the leader erased (k3).
  KvStore leader_store;
  for (uint64_t i = 0; i < 8; ++i)
    if (i != 3) leader_store.put(kvdemo::key_of(i, 16), "v" + std::to_string(i));
  for (uint64_t i = 0; i < 8; ++i)
    if (i != 1)
      follower_store.put(kvdemo::key_of(i, 16), i == 2 ? "other" : "v" + std::to_string(i));

  auto c = check_reads(leader_store, config.workload, where, "tcp", "", 100);
  REQUIRE(c.ok());
  CHECK(c->keys == 8);
  CHECK(c->replicas == 1);
  CHECK(c->found == 7);
  CHECK(c->mismatches == 3);
  // The server counts a pass's keys after posting its responses: the client may have them
  // first.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((*server)->stats().keys < 8 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK((*server)->stats().keys == 8);
  auto wire = kvdemo::ReadCheck::from_wire("readcheck " + c->to_wire());
  REQUIRE(wire.ok());
  CHECK(wire->mismatches == 3);
  CHECK(wire->found == 7);

  // An unreachable replica is an error that names it.
  (*server)->close();
  auto gone = check_reads(leader_store, config.workload, where, "tcp", "", 100);
  REQUIRE_FALSE(gone.ok());
  CHECK_THAT(gone.error().message(), Catch::Contains(where));
}
