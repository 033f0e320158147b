// A follower shard's IncomingCheckpoint: chunks are taken only in order, with their running
// CRC32C, and anything that breaks the sequence drops what was received.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "follower_chunks.h"
#include "rdmarepl/core/crc32c.h"

using namespace rdmarepl;
using namespace rdmarepl::replication::detail;

namespace {

// The checkpoint `payload` of checkpoint `id`, as the write that carries bytes
// [offset, offset + length): header, then that part of the payload.
struct Chunk {
  ChunkHeader h;
  std::vector<std::byte> write;
};

Chunk chunk(const std::vector<uint8_t>& payload, uint64_t id, uint64_t offset, uint32_t length) {
  Chunk c;
  c.h.id = id;
  c.h.total = payload.size();
  c.h.offset = offset;
  c.h.length = length;
  c.h.crc = crc32c::extend(0, payload.data(), offset + length);
  c.h.flags = offset + length == payload.size() ? kChunkLast : 0;
  c.write.resize(kChunkHeaderSize + length);
  encode_chunk_header(c.h,
                      std::span<std::byte, kChunkHeaderSize>(c.write.data(), kChunkHeaderSize));
  for (uint32_t i = 0; i < length; ++i)
    c.write[kChunkHeaderSize + i] = std::byte{payload[offset + i]};
  return c;
}

std::vector<uint8_t> sample(size_t n) {
  std::vector<uint8_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 7 + 3);
  return p;
}

// Feeds one chunk the way the follower does: the header check, a start on offset 0, then
// the payload.
bool feed(IncomingCheckpoint& in, const Chunk& c, std::string& why) {
  ChunkHeader h;
  if (!in.check(c.write, static_cast<uint32_t>(c.write.size()), h, why)) return false;
  if (h.offset == 0 && !in.start(h.id, h.total)) return false;
  return in.take(h, reinterpret_cast<const uint8_t*>(c.write.data() + kChunkHeaderSize), why);
}

}  // namespace

TEST_CASE("chunks taken in order make the checkpoint ready with its payload", "[unit]") {
  const auto payload = sample(1000);
  IncomingCheckpoint in;
  std::string why;
  REQUIRE(feed(in, chunk(payload, 9, 0, 600), why));
  CHECK_FALSE(in.ready());
  REQUIRE(feed(in, chunk(payload, 9, 600, 400), why));
  REQUIRE(in.ready());
  CHECK(in.id() == 9);
  // A chunk while the checkpoint waits to be installed is a protocol error.
  ChunkHeader h;
  const auto again = chunk(payload, 9, 0, 600);
  CHECK_FALSE(in.check(again.write, static_cast<uint32_t>(again.write.size()), h, why));
  CHECK(why.find("being installed") != std::string::npos);
  CHECK(in.release() == payload);
  in.reset();
  CHECK_FALSE(in.ready());
}

TEST_CASE("a chunk that does not continue the checkpoint drops it", "[unit]") {
  const auto payload = sample(900);
  IncomingCheckpoint in;
  std::string why;
  REQUIRE(feed(in, chunk(payload, 4, 0, 300), why));
  CHECK_FALSE(feed(in, chunk(payload, 4, 600, 300), why));  // skips 300..600
  CHECK(why.find("does not continue") != std::string::npos);
  // What was received is gone: the next chunk in order no longer continues anything.
  why.clear();
  CHECK_FALSE(feed(in, chunk(payload, 4, 300, 300), why));
  CHECK(why.find("does not continue") != std::string::npos);
  // Another checkpoint's chunk does not continue this one either.
  REQUIRE(feed(in, chunk(payload, 4, 0, 300), why));
  CHECK_FALSE(feed(in, chunk(payload, 5, 300, 300), why));
  CHECK_FALSE(in.ready());
}

TEST_CASE("a chunk whose payload fails the running CRC32C drops the checkpoint", "[unit]") {
  const auto payload = sample(512);
  IncomingCheckpoint in;
  std::string why;
  REQUIRE(feed(in, chunk(payload, 1, 0, 256), why));
  auto bad = chunk(payload, 1, 256, 256);
  bad.write[kChunkHeaderSize + 10] ^= std::byte{0x01};
  CHECK_FALSE(feed(in, bad, why));
  CHECK(why.find("CRC32C") != std::string::npos);
  CHECK_FALSE(in.ready());
}

TEST_CASE("a chunk whose write length differs from its header is refused", "[unit]") {
  const auto payload = sample(128);
  auto c = chunk(payload, 2, 0, 128);
  c.write.push_back(std::byte{0});
  IncomingCheckpoint in;
  ChunkHeader h;
  std::string why;
  CHECK_FALSE(in.check(c.write, static_cast<uint32_t>(c.write.size()), h, why));
  CHECK(why.find("arrived as a write of") != std::string::npos);
}
