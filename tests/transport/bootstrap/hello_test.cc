#include "transport/bootstrap/hello.h"

#include <catch2/catch.hpp>

#include <random>

#include "rdmarepl/core/byte_order.h"

using namespace rdmarepl;
using namespace rdmarepl::transport;
using namespace rdmarepl::transport::bootstrap;

namespace {
Hello sample() {
  Hello h;
  h.kind = TransportKind::verbs;
  h.node_id = "replica-7";
  h.transport_blob = {1, 2, 3, 4, 5};
  h.regions = {{0x7f0000001000ull, 4096, 0xdeadbeef}, {0x1000, 1u << 20, 42}};
  h.app_data = std::string("ring\0credits", 12);
  return h;
}
}  // namespace

TEST_CASE("Hello round-trips through its wire form", "[transport][bootstrap]") {
  auto h = sample();
  auto bytes = serialize_hello(h);
  REQUIRE(bytes.ok());
  CHECK(bytes->size() == kHelloFixedBytes + 9 + 5 + 2 * 16 + 12);
  auto back = parse_hello(*bytes);
  REQUIRE(back.ok());
  CHECK(*back == h);

  Hello empty;
  auto e = serialize_hello(empty);
  REQUIRE(e.ok());
  CHECK(e->size() == kHelloFixedBytes);
  REQUIRE(parse_hello(*e).ok());
}

TEST_CASE("A Hello names a real transport, never the automatic choice", "[transport][bootstrap]") {
  auto h = sample();
  h.kind = TransportKind::automatic;
  auto bytes = serialize_hello(h);
  REQUIRE_FALSE(bytes.ok());
  CHECK(bytes.error().is(Errc::invalid_argument));
  CHECK_THAT(bytes.error().message(), Catch::Contains("auto"));

  h.kind = TransportKind::tcp;
  auto wire = serialize_hello(h);
  REQUIRE(wire.ok());
  (*wire)[2] = static_cast<uint8_t>(TransportKind::automatic);  // the kind byte
  auto parsed = parse_hello(*wire);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().is(Errc::protocol_error));
}

TEST_CASE("Hello layout is big-endian as documented", "[transport][bootstrap]") {
  Hello h;
  h.node_id = "ab";
  h.regions = {{0x0102030405060708ull, 0x11223344u, 0x55667788u}};
  auto bytes = serialize_hello(h).value();
  const std::vector<uint8_t> expected = {
      0x00, 0x01, 0x01, 0x00,                          // version 1, kind tcp, flags
      0x00, 0x02, 'a',  'b',                           // node_id
      0x00, 0x00,                                      // empty blob
      0x00, 0x00, 0x00, 0x01,                          // one region
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // addr
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,  // length, rkey
      0x00, 0x00, 0x00, 0x00};                         // no app_data
  CHECK(bytes == expected);
}

TEST_CASE("serialize_hello refuses fields over their limits", "[transport][bootstrap]") {
  Hello h;
  h.node_id.assign(kMaxNodeIdBytes + 1, 'x');
  auto r = serialize_hello(h);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().is(Errc::too_large));
  CHECK(r.error().message().find("node_id") != std::string::npos);

  Hello a;
  a.app_data.assign(kMaxAppDataBytes + 1, 'x');
  CHECK_FALSE(serialize_hello(a).ok());
  Hello b;
  b.regions.resize(kMaxRegions + 1);
  CHECK_FALSE(serialize_hello(b).ok());
  Hello c;
  c.transport_blob.resize(kMaxTransportBlobBytes + 1);
  CHECK_FALSE(serialize_hello(c).ok());
}

TEST_CASE("parse_hello rejects every truncation and trailing bytes", "[transport][bootstrap]") {
  auto bytes = serialize_hello(sample()).value();
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = parse_hello(std::span(bytes).first(n));
    INFO("prefix of " << n << " bytes");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().is(Errc::protocol_error));
  }
  bytes.push_back(0);
  auto r = parse_hello(bytes);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message().find("trailing") != std::string::npos);
}

TEST_CASE("parse_hello names oversized and unknown fields", "[transport][bootstrap]") {
  auto bytes = serialize_hello(sample()).value();
  SECTION("wrong version") {
    store_be16(bytes.data(), 2);
    auto r = parse_hello(bytes);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().is(Errc::unsupported));
    CHECK(r.error().message().find("version 2") != std::string::npos);
  }
  SECTION("unknown kind") {
    bytes[2] = 9;
    CHECK(parse_hello(bytes).error().message().find("transport kind 9") != std::string::npos);
  }
  SECTION("node id over the limit") {
    store_be16(bytes.data() + 4, 0xffff);
    CHECK(parse_hello(bytes).error().message().find("node_id length 65535") != std::string::npos);
  }
  SECTION("region count over the limit, no allocation of it") {
    size_t at = 4 + 2 + 9 + 2 + 5;
    store_be32(bytes.data() + at, 0xffffffffu);
    CHECK(parse_hello(bytes).error().message().find("region count 4294967295") !=
          std::string::npos);
  }
  SECTION("region count within the limit but more than the bytes") {
    size_t at = 4 + 2 + 9 + 2 + 5;
    store_be32(bytes.data() + at, 100);
    CHECK(parse_hello(bytes).error().message().find("truncated") != std::string::npos);
  }
}

TEST_CASE("parse_hello survives random and mutated inputs", "[transport][bootstrap]") {
  std::mt19937_64 rng(12345);
  auto good = serialize_hello(sample()).value();
  size_t accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> in;
    if (i % 2 == 0) {
      in.resize(rng() % 300);
      for (auto& b : in) b = static_cast<uint8_t>(rng());
    } else {
      in = good;
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) in[rng() % in.size()] = static_cast<uint8_t>(rng());
    }
    auto r = parse_hello(in);
    if (r.ok()) {
      ++accepted;
      // Whatever parses must re-encode to exactly the same bytes (the format is canonical).
      CHECK(serialize_hello(*r).value() == in);
    }
  }
  // Mutating only payload bytes (node id, blob, region or app data contents) still parses.
  CHECK(accepted > 0);
}
