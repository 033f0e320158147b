// Writes the seed inputs of the replication_batch, handshake and checkpoint_chunk fuzz
// targets with the real encoders (BatchBuilder, serialize_hello, the replication hello
// encoders, encode_chunk_header), so the seeds
// are valid messages of the current format:
//
//   cmake --build build-fuzz --target make_seeds && build-fuzz/make_seeds tests/fuzz/corpus
//
// Each file is <selector byte><message>; the selector is the byte the target reads first.
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/transport/bootstrap/hello.h"
#include "replication/checkpoint_ship.h"
#include "replication/hello.h"

namespace fs = std::filesystem;
using namespace rdmarepl;

namespace {

bool write(const fs::path& dir, const std::string& name, uint8_t selector, const void* data,
           size_t size) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.put(static_cast<char>(selector));
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  return static_cast<bool>(out);
}

struct Put {
  replication::Op op;
  std::string key;
  std::string value;
};

bool batch(const fs::path& dir, const std::string& name, uint16_t shard, uint64_t first_seq,
           const std::vector<Put>& records) {
  std::vector<std::byte> buf(4096);
  replication::BatchBuilder b;
  b.start(buf.data(), buf.size(), shard, first_seq);
  uint64_t ts = 1'700'000'000'000'000'000ull;
  for (const auto& r : records) {
    if (!b.fits(r.key.size(), r.value.size())) return false;
    b.add(r.op, r.key, r.value, ts++);
  }
  const size_t n = b.seal();
  // Selector 0: the fuzz target parses the bytes as they are.
  return write(dir, name, 0, buf.data(), n);
}

bool hello(const fs::path& dir, const std::string& name, const transport::bootstrap::Hello& h) {
  auto enc = transport::bootstrap::serialize_hello(h);
  return enc.ok() && write(dir, name, 0, enc->data(), enc->size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir, e.g. tests/fuzz/corpus>\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  bool ok = true;

  const fs::path b = root / "replication_batch";
  using replication::Op;
  ok &= batch(b, "empty_batch", 0, 1, {});
  ok &= batch(b, "one_put", 3, 42, {{Op::put, "user:1", "alice"}});
  ok &= batch(b, "put_and_erase", 1, 7, {{Op::put, "k", "v"}, {Op::erase, "k", ""}});
  ok &= batch(b, "empty_value", 0, 1, {{Op::put, "empty", ""}});
  ok &= batch(b, "long_key", 2, 100,
              {{Op::put, std::string(40, 'k'), std::string(9, 'v')}, {Op::put, "x", "yz"}});

  const fs::path h = root / "handshake";
  namespace rd = replication::detail;
  const std::string leader = rd::encode(rd::LeaderHello{.shard = 1,
                                                        .shard_count = 4,
                                                        .queue_depth = 64,
                                                        .ring_bytes = 1 << 20,
                                                        .large_bytes = 1 << 24});
  const std::string follower = rd::encode(rd::FollowerHello{.shard_count = 3,
                                                            .queue_depth = 62,
                                                            .ring_bytes = 1 << 20,
                                                            .large_bytes = 1 << 24,
                                                            .applied = {0, 17, 123456},
                                                            .generation = {0, 1, 1}});
  ok &= write(h, "leader_hello", 1, leader.data(), leader.size());
  ok &= write(h, "follower_hello", 2, follower.data(), follower.size());
  transport::bootstrap::Hello tcp;
  tcp.kind = transport::bootstrap::TransportKind::tcp;
  tcp.node_id = "leader-a";
  tcp.app_data = leader;
  ok &= hello(h, "bootstrap_tcp_leader", tcp);
  transport::bootstrap::Hello verbs;
  verbs.kind = transport::bootstrap::TransportKind::verbs;
  verbs.node_id = "follower-b";
  verbs.transport_blob = {0x00, 0x01, 0x2a, 0x10, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  verbs.regions = {{.addr = 0x7f0000001000, .length = 1 << 20, .rkey = 0x1234},
                   {.addr = 0x7f0000200000, .length = 1 << 24, .rkey = 0x5678}};
  verbs.app_data = follower;
  ok &= hello(h, "bootstrap_verbs_follower", verbs);
  ok &= hello(h, "bootstrap_empty", transport::bootstrap::Hello{});

  const fs::path c = root / "checkpoint_chunk";
  auto chunk = [&](const std::string& name, const rd::ChunkHeader& ch) {
    std::array<std::byte, rd::kChunkHeaderSize> bytes{};
    rd::encode_chunk_header(ch, bytes);
    return write(c, name, 0, bytes.data(), bytes.size());
  };
  ok &= chunk("first_of_three", rd::ChunkHeader{.flags = 0,
                                                .id = 235,
                                                .total = 300000,
                                                .offset = 0,
                                                .length = 131024,
                                                .crc = 0x1234abcd});
  ok &= chunk("last", rd::ChunkHeader{.flags = rd::kChunkLast,
                                      .id = 235,
                                      .total = 300000,
                                      .offset = 262048,
                                      .length = 37952,
                                      .crc = 0x0badf00d});
  ok &= chunk(
      "whole_in_one",
      rd::ChunkHeader{
          .flags = rd::kChunkLast, .id = 1, .total = 40, .offset = 0, .length = 40, .crc = 7});

  if (!ok) {
    std::fprintf(stderr, "make_seeds: could not write the seeds under %s\n", argv[1]);
    return 1;
  }
  return 0;
}
