// The remote-read messages: round trips and the parser's refusals.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "rdmarepl/core/byte_order.h"
#include "reads/read_format.h"

using namespace rdmarepl;
using namespace rdmarepl::reads;

namespace {

std::vector<uint8_t> request(const RequestHeader& h, std::vector<std::string_view> keys) {
  std::vector<uint8_t> out(request_size(keys));
  REQUIRE(encode_request(h, keys, out) == out.size());
  return out;
}

bool parses(const std::vector<uint8_t>& msg, std::string_view& why) {
  RequestHeader h;
  std::vector<std::string_view> keys(kMaxKeysPerRequest);
  return parse_request(msg, h, keys, why);
}

}  // namespace

TEST_CASE("a request round-trips", "[reads][format]") {
  RequestHeader h;
  h.request_id = 77;
  h.kind = Consistency::Kind::at_least;
  h.shard = 3;
  h.min_seq = 123456789012;
  h.wait_ms = 250;
  const std::string big(60000, 'k');
  auto msg = request(h, {"a", "", big, "key-3"});
  CHECK(msg.size() == kRequestHeaderBytes + 4 * 2 + 1 + 60000 + 5);
  CHECK(load_be16(msg.data()) == kRequestMagic);
  RequestHeader got;
  std::vector<std::string_view> keys(kMaxKeysPerRequest);
  std::string_view why;
  REQUIRE(parse_request(msg, got, keys, why));
  CHECK(got.request_id == 77);
  CHECK(got.count == 4);
  CHECK(got.kind == Consistency::Kind::at_least);
  CHECK(got.shard == 3);
  CHECK(got.min_seq == 123456789012);
  CHECK(got.wait_ms == 250);
  CHECK(keys[0] == "a");
  CHECK(keys[1].empty());
  CHECK(keys[2] == big);
  CHECK(keys[3] == "key-3");
  CHECK(peek_request_id(msg) == 77);
}

TEST_CASE("malformed requests are refused with a reason", "[reads][format]") {
  RequestHeader h;
  h.request_id = 5;
  const auto good = request(h, {"abc", "de"});
  std::string_view why;
  REQUIRE(parses(good, why));
  SECTION("every truncation") {
    for (size_t n = 0; n < good.size(); ++n) {
      INFO("length " << n);
      CHECK_FALSE(
          parses(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<long>(n)), why));
      CHECK_FALSE(why.empty());
    }
  }
  SECTION("trailing bytes") {
    auto m = good;
    m.push_back(0);
    CHECK_FALSE(parses(m, why));
    CHECK(why.find("left over") != std::string_view::npos);
  }
  SECTION("bad magic, version, reserved bits, consistency, count") {
    auto m = good;
    m[0] ^= 1;
    CHECK_FALSE(parses(m, why));
    m = good;
    m[2] = 2;
    CHECK_FALSE(parses(m, why));
    m = good;
    m[3] = 1;
    CHECK_FALSE(parses(m, why));
    m = good;
    m[10] = 3;
    CHECK_FALSE(parses(m, why));
    m = good;
    store_be16(m.data() + 8, 0);
    CHECK_FALSE(parses(m, why));
    store_be16(m.data() + 8, 1025);
    CHECK_FALSE(parses(m, why));
  }
  SECTION("a key length past the end") {
    auto m = good;
    store_be16(m.data() + kRequestHeaderBytes, 400);
    CHECK_FALSE(parses(m, why));
    CHECK(why.find("truncated") != std::string_view::npos);
  }
}

TEST_CASE("a response round-trips and the reader checks its lengths", "[reads][format]") {
  std::vector<uint8_t> buf(256);
  ResponseWriter w(buf);
  CHECK(w.fits(100));
  w.add(EntryStatus::found, "value-1");
  w.add(EntryStatus::not_found, {});
  w.add(EntryStatus::retry, {});
  const size_t n = w.finish(9, ResponseStatus::ok, 0);
  CHECK(n == kResponseHeaderBytes + 3 * kResponseEntryBytes + 7);
  CHECK_FALSE(w.fits(256));
  ResponseReader r;
  ResponseHeader h;
  std::string_view why;
  REQUIRE(r.open(std::span(buf.data(), n), h, why));
  CHECK(h.request_id == 9);
  CHECK(h.count == 3);
  ResponseEntry e;
  REQUIRE(r.next(e, why));
  CHECK((e.status == EntryStatus::found && e.value == "value-1"));
  REQUIRE(r.next(e, why));
  CHECK(e.status == EntryStatus::not_found);
  REQUIRE(r.next(e, why));
  CHECK(e.status == EntryStatus::retry);
  CHECK(r.at_end());
  CHECK_FALSE(r.next(e, why));

  ResponseReader cut;
  REQUIRE(cut.open(std::span(buf.data(), kResponseHeaderBytes + 8), h, why));
  CHECK_FALSE(cut.next(e, why));  // the value runs past the end
}

TEST_CASE("the hello names the peer's role and refuses other protocols", "[reads][format]") {
  std::string b(kHelloBytes, '\0');
  encode_hello(Hello{kServerHelloMagic, true, 16, 4096, 1 << 20},
               reinterpret_cast<uint8_t*>(b.data()));
  Hello h;
  std::string_view why;
  REQUIRE(parse_hello(b, kServerHelloMagic, h, why));
  CHECK(h.leader);
  CHECK(h.queue_depth == 16);
  CHECK(h.max_request_bytes == 4096);
  CHECK(h.max_response_bytes == (1u << 20));
  CHECK_FALSE(parse_hello(b, kClientHelloMagic, h, why));
  b[4] = 2;
  CHECK_FALSE(parse_hello(b, kServerHelloMagic, h, why));
  CHECK(why.find("version") != std::string_view::npos);
  CHECK_FALSE(parse_hello("garbage", kServerHelloMagic, h, why));
}
