// The follower's leader epoch file (docs/wal_format.md, "Leader epoch file"): the worked
// example's bytes, a round trip through the directory, and damage that refuses to load.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "leader_epoch_file.h"
#include "wal/wal_test_util.h"

using namespace rdmarepl;
using namespace rdmarepl::replication::detail;

TEST_CASE("the leader epoch file encodes as documented and round-trips", "[unit]") {
  const std::vector<uint8_t> bytes = encode(AcceptedLeader{2, "ab"});
  // magic "RPLE", version 1, node id length 2, epoch 2, "ab", then the masked CRC32C.
  const std::vector<uint8_t> head{0x52, 0x50, 0x4c, 0x45, 0x00, 0x01, 0x00, 0x02, 0,
                                  0,    0,    0,    0,    0,    0,    2,    'a',  'b'};
  REQUIRE(bytes.size() == head.size() + 4);
  CHECK(std::equal(head.begin(), head.end(), bytes.begin()));
  // The worked example of docs/wal_format.md, "Leader epoch file".
  CHECK(std::vector<uint8_t>(bytes.end() - 4, bytes.end()) ==
        std::vector<uint8_t>{0x12, 0x06, 0x24, 0x79});
  AcceptedLeader back;
  std::string why;
  REQUIRE(decode(bytes, back, why));
  CHECK(back.epoch == 2);
  CHECK(back.node_id == "ab");
  for (size_t i = 0; i < bytes.size(); ++i) {  // any byte changed is refused
    auto bad = bytes;
    bad[i] ^= 0x01;
    CHECK_FALSE(decode(bad, back, why));
  }
  CHECK_FALSE(decode(std::span(bytes).first(bytes.size() - 1), back, why));
}

TEST_CASE("the leader epoch file is stored durably, loaded, and a damaged one is named", "[unit]") {
  wal::test::TempDir dir;
  auto none = load_accepted_leader(dir.path());
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  REQUIRE(store_accepted_leader(dir.path(), {7, "leader-b"}).ok());
  REQUIRE(store_accepted_leader(dir.path(), {9, "leader-c"}).ok());  // replaces it
  auto got = load_accepted_leader(dir.path());
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->epoch == 9);
  CHECK((*got)->node_id == "leader-c");
  {
    std::ofstream f(dir.path() + "/leader-epoch", std::ios::binary | std::ios::app);
    f << 'x';
  }
  auto bad = load_accepted_leader(dir.path());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().is(Errc::corrupt));
  CHECK(bad.error().message().find("delete it to forget the epoch") != std::string::npos);
}
