#include "rdmarepl/wal/checkpoint.h"

#include <catch2/catch.hpp>

#include <filesystem>

#include "wal/wal_test_util.h"

using namespace rdmarepl;
using namespace rdmarepl::wal;
using namespace rdmarepl::wal::test;

namespace {
void write_checkpoint(const TempDir& dir, uint64_t seq, const std::string& data) {
  auto w = CheckpointWriter::create(dir.path(), seq);
  REQUIRE(w.ok());
  // Streamed in pieces, as a store's snapshot hook would.
  for (size_t i = 0; i < data.size(); i += 7) {
    auto piece = std::string_view(data).substr(i, 7);
    REQUIRE(w->append({reinterpret_cast<const uint8_t*>(piece.data()), piece.size()}).ok());
  }
  REQUIRE(w->commit().ok());
}

std::string read_all_payload(CheckpointReader& r) {
  std::string out;
  uint8_t buf[5];
  for (;;) {
    auto n = r.read(buf);
    REQUIRE(n.ok());
    if (*n == 0) break;
    out.append(reinterpret_cast<const char*>(buf), *n);
  }
  return out;
}
}  // namespace

TEST_CASE("checkpoint: write, commit and read back", "[wal][checkpoint]") {
  TempDir dir;
  const std::string data = "snapshot bytes of the store, streamed in small pieces";
  write_checkpoint(dir, 42, data);
  CHECK_FALSE(std::filesystem::exists(dir.file(checkpoint_file_name(42)) + ".tmp"));
  auto r = CheckpointReader::open(dir.file(checkpoint_file_name(42)));
  REQUIRE(r.ok());
  CHECK(r->seq() == 42);
  CHECK(r->size() == data.size());
  CHECK(read_all_payload(*r) == data);
  REQUIRE(r->rewind().ok());
  CHECK(read_all_payload(*r) == data);
}

TEST_CASE("checkpoint: empty and larger-than-staging payloads", "[wal][checkpoint]") {
  TempDir dir;
  write_checkpoint(dir, 1, "");
  auto e = CheckpointReader::open(dir.file(checkpoint_file_name(1)));
  REQUIRE(e.ok());
  CHECK(e->size() == 0);
  std::string big(3u << 20, 'b');
  for (size_t i = 0; i < big.size(); i += 4093) big[i] = static_cast<char>(i);
  write_checkpoint(dir, 2, big);
  auto r = CheckpointReader::open(dir.file(checkpoint_file_name(2)));
  REQUIRE(r.ok());
  std::string back(big.size(), '\0');
  auto n = r->read({reinterpret_cast<uint8_t*>(back.data()), back.size()});
  REQUIRE(n.ok());
  CHECK(*n == big.size());
  CHECK(back == big);
}

TEST_CASE("checkpoint: abandoned writer leaves nothing", "[wal][checkpoint]") {
  TempDir dir;
  {
    auto w = CheckpointWriter::create(dir.path(), 5);
    REQUIRE(w.ok());
    REQUIRE(w->append(bytes_of("partial")).ok());
  }
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("checkpoint: every flipped byte and every truncation is detected", "[wal][checkpoint]") {
  TempDir dir;
  write_checkpoint(dir, 9, "0123456789abcdef");
  const std::string path = dir.file(checkpoint_file_name(9));
  const auto good = read_file(path);
  for (size_t i = 0; i < good.size(); ++i) {
    auto bad = good;
    bad[i] ^= 0x04;
    write_file(path, bad);
    auto r = CheckpointReader::open(path);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().is(Errc::corrupt));
  }
  for (size_t n = 0; n < good.size(); ++n) {
    write_file(path, std::vector<uint8_t>(good.begin(), good.begin() + static_cast<ptrdiff_t>(n)));
    CHECK_FALSE(CheckpointReader::open(path).ok());
  }
}

TEST_CASE("checkpoint: a corrupt newest checkpoint falls back to the older one",
          "[wal][checkpoint]") {
  TempDir dir;
  write_checkpoint(dir, 10, "older");
  write_checkpoint(dir, 20, "newer");
  {
    CollectingReporter rep;
    auto r = load_newest_checkpoint(dir.path(), &rep);
    REQUIRE(r.ok());
    REQUIRE(r->has_value());
    CHECK((*r)->seq() == 20);
    CHECK(rep.damages.empty());
  }
  flip_byte(dir.file(checkpoint_file_name(20)), kCheckpointHeaderSize + 1);
  CollectingReporter rep;
  auto r = load_newest_checkpoint(dir.path(), &rep);
  REQUIRE(r.ok());
  REQUIRE(r->has_value());
  CHECK((*r)->seq() == 10);
  CHECK(read_all_payload(**r) == "older");
  REQUIRE(rep.damages.size() == 1);
  CHECK(rep.damages[0].reason == DamageReason::bad_checkpoint);
  CHECK(rep.damages[0].segment == 20);

  flip_byte(dir.file(checkpoint_file_name(10)), 3);
  auto none = load_newest_checkpoint(dir.path(), nullptr);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}
