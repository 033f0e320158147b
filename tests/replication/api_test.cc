// Pure pieces of the replication API: immediates, shard mapping, the Store concept,
// options validation, the handshake payloads and the histogram.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "hello.h"
#include "probe.h"
#include "rdmarepl/metrics/histogram.h"
#include "rdmarepl/rdmarepl.h"
#include "replication/imm.h"
#include "replication/shard.h"

using namespace rdmarepl::replication;

namespace {

struct GoodStore {
  std::map<std::string, std::string> data;
  void apply(const Record& r) {
    if (r.op == Op::put)
      data[std::string(r.key)] = r.value;
    else
      data.erase(std::string(r.key));
  }
  bool get(std::string_view k, std::string& out) {
    auto it = data.find(std::string(k));
    if (it == data.end()) return false;
    out = it->second;
    return true;
  }
};
struct NoApply {
  void put(std::string_view, std::string_view) {}
};
struct WrongApply {
  void apply(int) {}
};
struct Snap {
  void apply(const Record&) {}
  rdmarepl::Status snapshot(SnapshotWriter&) { return {}; }
  rdmarepl::Status restore(SnapshotReader&) { return {}; }
};

}  // namespace

// The concept rejects stores without the hook; ReplicationChannel<NoApply> would fail with
// the static_assert's message.
static_assert(Store<GoodStore>);
static_assert(!Store<NoApply>);
static_assert(!Store<WrongApply>);
static_assert(ReadableStore<GoodStore>);
static_assert(!ReadableStore<Snap>);
static_assert(SnapshottableStore<Snap>);
static_assert(!SnapshottableStore<GoodStore>);

TEST_CASE("immediates carry kind, shard and argument", "[imm]") {
  for (auto kind : {ImmKind::ring_batch, ImmKind::large_batch, ImmKind::ack}) {
    for (uint32_t shard : {0u, 1u, 517u, kImmShardMask}) {
      for (uint32_t arg : {0u, 1u, 12345u, kImmArgMask}) {
        const uint32_t imm = make_imm(kind, shard, arg);
        CHECK(imm_kind(imm) == kind);
        CHECK(imm_shard(imm) == shard);
        CHECK(imm_arg(imm) == arg);
      }
    }
  }
  CHECK(imm_arg(make_imm(ImmKind::ack, 3, kImmArgMask + 5)) == 4);  // only the low 20 bits travel
  CHECK(imm_shard(make_imm(ImmKind::ack, 3, kImmArgMask + 5)) == 3);
}

TEST_CASE("a ring offset travels as 'at 0' or as a check of the cursor", "[imm]") {
  CHECK(ring_imm_arg(0) == kRingAtZero);
  CHECK(ring_imm_matches(ring_imm_arg(0), 0));
  for (uint64_t off : {uint64_t{8}, uint64_t{4096}, uint64_t{4} << 20, uint64_t{5} << 30}) {
    INFO("offset " << off);
    CHECK(ring_imm_matches(ring_imm_arg(off), off));
    CHECK_FALSE(ring_imm_matches(ring_imm_arg(off), off + 8));
    CHECK_FALSE(ring_imm_matches(ring_imm_arg(off), 0));
  }
  // A multiple of 4 MiB has low bits 0 but is still told apart from a wrap to 0.
  CHECK_FALSE(ring_imm_matches(ring_imm_arg(uint64_t{4} << 20), 0));
}

TEST_CASE("a 20-bit seq widens back to the full seq at or after the last acknowledged", "[imm]") {
  const uint64_t span = uint64_t{1} << kImmArgBits;
  for (uint64_t acked : {uint64_t{0}, uint64_t{5}, span - 3, span, span + 7, 5 * span + 100}) {
    for (uint64_t delta : {uint64_t{0}, uint64_t{1}, uint64_t{1000}, kMaxUnackedRecords}) {
      const uint64_t seq = acked + delta;
      INFO("acked " << acked << " delta " << delta);
      CHECK(widen_seq(static_cast<uint32_t>(seq & kImmArgMask), acked) == seq);
    }
  }
}

TEST_CASE("a key always maps to the same shard and keys spread over shards", "[shard]") {
  CHECK(shard_of("user:42", 8) == shard_of("user:42", 8));
  CHECK(fnv1a64("") == 0xcbf29ce484222325ull);  // FNV-1a offset basis: stable across builds
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  std::map<uint32_t, int> counts;
  for (int i = 0; i < 8000; ++i) ++counts[shard_of("key" + std::to_string(i), 8)];
  REQUIRE(counts.size() == 8);
  for (auto& [shard, n] : counts) {
    INFO("shard " << shard);
    CHECK(n > 700);  // 1000 expected; a broken hash puts everything on a few shards
    CHECK(n < 1300);
  }
  CHECK(shard_of("anything", 1) == 0);
}

TEST_CASE("options validation names the field and the fix", "[options]") {
  ChannelOptions o;
  o.peers = {{"127.0.0.1", 1}};
  REQUIRE(validate(o).ok());
  SECTION("zero shards") {
    o.shards = 0;
    auto st = validate(o);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message().find("shards") != std::string::npos);
  }
  SECTION("batch larger than a quarter ring") {
    o.batch_bytes = o.ring_bytes;
    auto st = validate(o);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message().find("batch_bytes") != std::string::npos);
  }
  SECTION("window too small for the largest value") {
    o.retain_bytes = 1 << 20;
    auto st = validate(o);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message().find("retain_bytes") != std::string::npos);
    CHECK(st.error().is(rdmarepl::Errc::invalid_argument));
  }
  SECTION("ack mode without followers") {
    o.peers.clear();
    CHECK_FALSE(validate(o).ok());
    o.ack_mode = AckMode::none;
    CHECK(validate(o).ok());
  }
  SECTION("a follower needs no window") {
    o.role = Role::follower;
    o.retain_bytes = 0;
    CHECK(validate(o).ok());
  }
  SECTION("a follower beyond loopback needs a key or an explicit opt-out") {
    o.role = Role::follower;
    for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) {
      o.listen = {host, 7000};
      CHECK(validate(o).ok());
    }
    for (const char* host : {"", "0.0.0.0", "10.9.1.2", "::", "db1.example"}) {
      o.listen = {host, 7000};
      auto st = validate(o);
      REQUIRE_FALSE(st.ok());
      CHECK(st.error().is(rdmarepl::Errc::invalid_argument));
      CHECK_THAT(st.error().message(), Catch::Contains("pre_shared_key is empty") &&
                                           Catch::Contains("allow_unauthenticated") &&
                                           Catch::Contains("port 7000"));
    }
    o.pre_shared_key = "k";
    CHECK(validate(o).ok());
    o.pre_shared_key.clear();
    o.allow_unauthenticated = true;
    CHECK(validate(o).ok());
    o.role = Role::leader;  // a leader listens on nothing
    o.allow_unauthenticated = false;
    CHECK(validate(o).ok());
  }
  SECTION("RDMA CM set-up needs a verbs transport") {
    o.rdma_cm = true;
    o.transport = TransportKind::tcp;
    auto st = validate(o);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message().find("rdma_cm") != std::string::npos);
    CHECK(st.error().message().find("transport = verbs") != std::string::npos);
    o.transport = TransportKind::verbs;
    CHECK(validate(o).ok());
    o.transport = TransportKind::automatic;
    CHECK(validate(o).ok());
  }
}

TEST_CASE("the probe hello: the documented bytes, and another version is named", "[hello]") {
  using namespace rdmarepl::replication::detail;
  // The example of docs/wire_format.md ("Probe").
  const std::string example("\x52\x50\x4c\x50\x00\x05\x00\x00", 8);
  CHECK(encode_probe_hello() == example);
  CHECK(is_probe_hello(example));
  CHECK(parse_probe_hello(example, "doctor").ok());
  // A leader hello is not a probe, and a probe is not a leader hello.
  CHECK_FALSE(is_probe_hello(encode(LeaderHello{0, 7, 4, 256, 4 << 20, 16 << 20, 2})));
  CHECK_FALSE(parse_leader_hello(example, "doctor").ok());
  auto newer = example;
  newer[5] = 6;
  auto r = parse_probe_hello(newer, "doctor");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().is(rdmarepl::Errc::protocol_error));
  CHECK(r.error().message().find("probe hello version 6 (this build speaks 5)") !=
        std::string::npos);
  auto reserved = example;
  reserved[7] = 1;
  CHECK_FALSE(parse_probe_hello(reserved, "doctor").ok());
  CHECK_FALSE(parse_probe_hello(example + "x", "doctor").ok());
}

TEST_CASE("handshake payloads round-trip and reject garbage", "[hello]") {
  using namespace rdmarepl::replication::detail;
  LeaderHello lh{3, 0x5eed, 8, 256, 1 << 22, 1 << 24, 0x0102030405060708};
  CHECK(encode(lh).size() == 48);
  auto l = parse_leader_hello(encode(lh), "peer");
  REQUIRE(l.ok());
  CHECK(l->epoch == 0x0102030405060708);
  // The example of docs/wire_format.md ("Replication handshake").
  const unsigned char example[48] = {0x52, 0x50, 0x4c, 0x4c, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00,
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x01, 0x00,
                                     0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40,
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
                                     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02};
  CHECK(encode(LeaderHello{0, 7, 4, 256, 4 << 20, 16 << 20, 2}) ==
        std::string(reinterpret_cast<const char*>(example), sizeof example));
  CHECK(l->carrier == 3);
  CHECK(l->session == 0x5eed);
  CHECK(l->shard_count == 8);
  CHECK(l->queue_depth == 256);
  CHECK(l->ring_bytes == (1u << 22));
  CHECK(l->large_bytes == (1u << 24));
  FollowerHello fh{2, 256, 1 << 22, 1 << 24, {17, 0}, {1, 0}};
  auto f = parse_follower_hello(encode(fh), "peer");
  REQUIRE(f.ok());
  CHECK(f->applied == std::vector<uint64_t>{17, 0});
  CHECK(f->generation == std::vector<uint8_t>{1, 0});
  // Only generations 0 and 1 exist; the reserved word after each is zero.
  for (const size_t at : {32 + 8 + 3, 32 + 12 + 3}) {
    auto bad_gen = encode(fh);
    bad_gen[at] = 2;
    auto r = parse_follower_hello(bad_gen, "peer");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().is(rdmarepl::Errc::protocol_error));
    CHECK(r.error().message().find("generation") != std::string::npos);
  }

  auto bytes = encode(lh);
  bytes[0] = 'X';
  CHECK(parse_leader_hello(bytes, "peer").error().is(rdmarepl::Errc::protocol_error));
  CHECK_FALSE(parse_leader_hello(encode(lh).substr(1), "peer").ok());
  LeaderHello out_of_range{9, 1, 8, 1, 1, 1};  // more carriers than shards
  CHECK_FALSE(parse_leader_hello(encode(out_of_range), "peer").ok());
  // A peer of wire version 4 (tags over the bytes themselves, not over their digest) is
  // refused by both sides, with the versions in the message.
  auto old_leader = encode(lh);
  auto old_follower = encode(fh);
  old_leader[5] = old_follower[5] = 4;
  auto old_l = parse_leader_hello(old_leader, "peer");
  auto old_f = parse_follower_hello(old_follower, "peer");
  REQUIRE_FALSE(old_l.ok());
  REQUIRE_FALSE(old_f.ok());
  for (const rdmarepl::Error& e : {old_l.error(), old_f.error()}) {
    CHECK(e.is(rdmarepl::Errc::protocol_error));
    CHECK(e.message().find("version 4 (this build speaks 5)") != std::string::npos);
  }
  // A version 3 leader sends 40 bytes (no epoch): it hears about the version, not the size.
  auto v3_leader = encode(lh).substr(0, 40);
  v3_leader[5] = 3;
  auto v3 = parse_leader_hello(v3_leader, "peer");
  REQUIRE_FALSE(v3.ok());
  CHECK(v3.error().message().find("version 3 (this build speaks 5); upgrade the leader and its "
                                  "followers together") != std::string::npos);
  CHECK_FALSE(parse_leader_hello(encode(lh).substr(0, 5), "peer").ok());
  auto fb = encode(fh);
  fb.pop_back();
  CHECK_FALSE(parse_follower_hello(fb, "peer").ok());
  CHECK_FALSE(parse_follower_hello(encode(lh), "peer").ok());
}

TEST_CASE("histogram buckets bound values within 12.5% and report percentiles", "[metrics]") {
  using rdmarepl::metrics::Histogram;
  for (uint64_t v : {0ull, 1ull, 7ull, 8ull, 9ull, 100ull, 1000ull, 123456789ull, ~0ull}) {
    const unsigned b = Histogram::bucket_of(v);
    REQUIRE(b < Histogram::kBuckets);
    CHECK(Histogram::bucket_upper(b) >= v);
    if (v >= 8)
      CHECK(static_cast<double>(Histogram::bucket_upper(b) - v) <= 0.125 * static_cast<double>(v));
    if (b > 0) CHECK(Histogram::bucket_upper(b - 1) < v);
  }
  Histogram h;
  for (uint64_t i = 1; i <= 1000; ++i) h.record(i * 1000);
  auto s = h.snapshot();
  CHECK(s.count == 1000);
  CHECK(s.max == 1'000'000);
  CHECK(s.p50() >= 500'000);
  CHECK(s.p50() <= 570'000);
  CHECK(s.p99() >= 990'000);
  CHECK(s.p999() == 1'000'000);
  CHECK(s.mean() == Approx(500'500.0));
  h.reset();
  CHECK(h.snapshot().p99() == 0);
}
