// The linearizability checker the failover runs trust for their verdict: it must accept
// every history a register could produce and reject stale reads, lost writes and values
// nobody wrote, with and without operations of unknown outcome.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "linearizability.h"

using namespace rdmarepl;
using namespace rdmarepl::kvdemo;

namespace {

HistoryOp put(std::string key, std::string value, uint64_t call, uint64_t ret,
              uint32_t client = 0) {
  HistoryOp op;
  op.client = client;
  op.write = true;
  op.key = std::move(key);
  op.value = std::move(value);
  op.call_ns = call;
  op.return_ns = ret;
  return op;
}

HistoryOp get(std::string key, const char* value, uint64_t call, uint64_t ret,
              uint32_t client = 0) {
  HistoryOp op;
  op.client = client;
  op.key = std::move(key);
  op.found = value != nullptr;
  op.value = value != nullptr ? value : "";
  op.call_ns = call;
  op.return_ns = ret;
  return op;
}

bool linearizable(const std::vector<HistoryOp>& h) {
  auto r = check_linearizable(h);
  if (!r.linearizable) INFO(r.explanation);
  return r.linearizable;
}

}  // namespace

TEST_CASE("linearizability: sequential histories of a register") {
  CHECK(linearizable({get("k", nullptr, 0, 1), put("k", "a", 2, 3), get("k", "a", 4, 5)}));
  CHECK(linearizable({put("k", "a", 0, 1), put("k", "b", 2, 3), get("k", "b", 4, 5)}));
  // A stale read, a read of nothing after an acknowledged write, a value nobody wrote.
  CHECK_FALSE(linearizable({put("k", "a", 0, 1), put("k", "b", 2, 3), get("k", "a", 4, 5)}));
  CHECK_FALSE(linearizable({put("k", "a", 0, 1), get("k", nullptr, 2, 3)}));
  CHECK_FALSE(linearizable({put("k", "a", 0, 1), get("k", "z", 2, 3)}));
}

TEST_CASE("linearizability: overlapping operations may take effect in either order") {
  // put(b) overlaps both reads: a then b is valid...
  CHECK(linearizable(
      {put("k", "a", 0, 1), put("k", "b", 2, 10, 1), get("k", "a", 3, 4), get("k", "b", 5, 6)}));
  // ...but once a read saw b, a later read cannot see a again.
  CHECK_FALSE(linearizable(
      {put("k", "a", 0, 1), put("k", "b", 2, 10, 1), get("k", "b", 3, 4), get("k", "a", 5, 6)}));
  // Two concurrent writers; readers after both agree on one winner.
  CHECK(linearizable({put("k", "a", 0, 5, 0), put("k", "b", 1, 6, 1), get("k", "a", 7, 8, 2),
                      get("k", "a", 9, 10, 3)}));
  CHECK_FALSE(linearizable({put("k", "a", 0, 5, 0), put("k", "b", 1, 6, 1), get("k", "a", 7, 8, 2),
                            get("k", "b", 9, 10, 3)}));
}

TEST_CASE("linearizability: a write of unknown outcome may take effect late or never") {
  const auto lost = put("k", "b", 2, kNoReturn, 1);
  CHECK(linearizable({put("k", "a", 0, 1), lost, get("k", "a", 5, 6)}));
  CHECK(linearizable({put("k", "a", 0, 1), lost, get("k", "a", 5, 6), get("k", "b", 100, 101)}));
  // Once seen, it stays (no later read of the older value).
  CHECK_FALSE(linearizable({put("k", "a", 0, 1), lost, get("k", "b", 5, 6), get("k", "a", 7, 8)}));
  // It cannot take effect before it was called.
  CHECK_FALSE(
      linearizable({put("k", "a", 0, 1), get("k", "b", 3, 4), put("k", "b", 10, kNoReturn)}));
  // A read of unknown outcome says nothing, even with a value nobody wrote.
  CHECK(linearizable({put("k", "a", 0, 1), get("k", "z", 2, kNoReturn)}));
}

TEST_CASE("linearizability: keys are checked independently and the failure names its key") {
  std::vector<HistoryOp> h = {put("x", "1", 0, 1), put("y", "1", 0, 1), get("x", "1", 2, 3),
                              put("y", "2", 4, 5), get("y", "1", 6, 7)};
  const auto r = check_linearizable(h);
  CHECK_FALSE(r.linearizable);
  CHECK(r.key == "y");
  CHECK(r.keys == 2);
  CHECK(r.explanation.find("get('y') -> '1'") != std::string::npos);
}

TEST_CASE("linearizability: random concurrent runs of a real register pass, corrupted ones fail") {
  std::mt19937_64 rng(7);
  for (int run = 0; run < 50; ++run) {
    // Operations take effect at distinct instants 10, 20, ...; each is called up to 25
    // before and returns up to 25 after, so neighbours overlap.
    std::vector<HistoryOp> h;
    std::string value;
    bool present = false;
    for (uint64_t i = 0; i < 60; ++i) {
      const uint64_t at = 100 + 10 * i;
      const uint64_t call = at - rng() % 25, ret = at + rng() % 25;
      const auto client = static_cast<uint32_t>(i % 4);
      if (rng() % 3 == 0) {
        value = std::to_string(i);
        present = true;
        // Now and then the client never learns the outcome of a write that happened.
        h.push_back(put("k", value, call, rng() % 8 == 0 ? kNoReturn : ret, client));
      } else {
        h.push_back(get("k", present ? value.c_str() : nullptr, call, ret, client));
      }
    }
    REQUIRE(linearizable(h));
    // Corrupt one read that saw a write: make it return a value no one wrote.
    for (auto& op : h)
      if (!op.write && op.found) {
        op.value = "never-written";
        break;
      }
    CHECK_FALSE(linearizable(h));
  }
}

TEST_CASE("linearizability: the history as Porcupine events") {
  const auto path = std::filesystem::temp_directory_path() / "rdmarepl-porcupine-test.json";
  std::vector<HistoryOp> h = {put("k", "a", 0, 1), put("k", "b", 2, kNoReturn, 1),
                              get("k", "a", 3, 4)};
  h[0].node = "n0";
  h[0].epoch = 7;
  REQUIRE(write_porcupine_json(h, path.string()));
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  REQUIRE(j.size() == 6);
  // Calls and returns in time order; the unknown outcome's return comes last.
  CHECK(j[0] == nlohmann::json::parse(R"({"ClientId":0,"Kind":false,"Id":0,
        "Value":{"op":"put","key":"k","node":"n0","value":"a"}})"));
  CHECK(j[1]["Kind"] == true);
  CHECK(j[1]["Value"]["epoch"] == 7);
  CHECK(j[4]["Id"] == 2);
  CHECK(j[4]["Value"]["value"] == "a");
  CHECK(j[5]["Id"] == 1);
  CHECK(j[5]["Value"]["unknown"] == true);
}
