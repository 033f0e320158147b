// Writes the seed inputs of the wal_frame_reader, replication_batch, handshake and
// checkpoint_chunk and read_request fuzz targets with the real encoders (the WAL's segment and
// frame header encoders around BatchBuilder batches, serialize_hello, the replication hello
// encoders, encode_chunk_header), so the seeds are valid messages of the current format:
//
//   cmake --build build-fuzz --target make_seeds && build-fuzz/make_seeds tests/fuzz/corpus
//
// Each file is <selector byte><message>; the selector is the byte the target reads first.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/wal/format.h"
#include "reads/read_format.h"
#include "replication/checkpoint_ship.h"
#include "replication/hello.h"
#include "transport/bootstrap/hello.h"

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
  uint8_t flags = 0;  // replication::kRecGroupNext inside a write group
};

std::vector<std::byte> encode_batch(uint16_t shard, uint64_t first_seq,
                                    const std::vector<Put>& records) {
  std::vector<std::byte> buf(4096);
  replication::BatchBuilder b;
  b.start(buf.data(), buf.size(), shard, first_seq);
  uint64_t ts = 1'700'000'000'000'000'000ull;
  for (const auto& r : records) {
    if (!b.fits(r.key.size(), r.value.size())) return {};
    b.add(r.op, r.key, r.value, ts++, r.flags);
  }
  buf.resize(b.seal());
  return buf;
}

bool batch(const fs::path& dir, const std::string& name, uint16_t shard, uint64_t first_seq,
           const std::vector<Put>& records) {
  const auto bytes = encode_batch(shard, first_seq, records);
  // Selector 0: the fuzz target parses the bytes as they are.
  return !bytes.empty() && write(dir, name, 0, bytes.data(), bytes.size());
}

// A WAL segment as a channel writes it (docs/wal_format.md): the segment header, then one
// frame per batch numbered 1, 2, ... (first_seq = last_seq = the frame number).
class Segment {
 public:
  Segment() : bytes_(wal::kSegmentHeaderSize) {
    wal::SegmentHeader{.segment_number = 1, .first_seq = 1}.encode(bytes_.data());
  }
  void add(std::span<const std::byte> batch, uint32_t records) {
    frame(wal::FrameType::batch, reinterpret_cast<const uint8_t*>(batch.data()), batch.size(),
          records, frames_ + 1, frames_ + 1);
    ++frames_;
  }
  // The end frame the writer writes when it seals the segment.
  void seal() { frame(wal::FrameType::end, nullptr, 0, frames_, 1, frames_); }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  void frame(wal::FrameType type, const uint8_t* payload, size_t len, uint32_t count,
             uint64_t first, uint64_t last) {
    const size_t off = bytes_.size();
    bytes_.resize(off + wal::kFrameHeaderSize + len);
    if (len != 0) std::memcpy(bytes_.data() + off + wal::kFrameHeaderSize, payload, len);
    wal::FrameHeader{.length = static_cast<uint32_t>(len),
                     .type = type,
                     .record_count = count,
                     .first_seq = first,
                     .last_seq = last}
        .encode(bytes_.data() + off, bytes_.data() + off + wal::kFrameHeaderSize);
  }
  std::vector<uint8_t> bytes_;
  uint32_t frames_ = 0;
};

bool wal_seeds(const fs::path& dir) {
  using replication::Op;
  const auto put = encode_batch(0, 1, {{Op::put, "key", "value"}, {Op::erase, "gone", ""}});
  const auto big = encode_batch(1, 1, {{Op::put, std::string(20, 'k'), std::string(150, 'v')}});
  const auto empty = encode_batch(2, 1, {});
  if (put.empty() || big.empty() || empty.empty()) return false;
  auto save = [&](const std::string& name, const std::vector<uint8_t>& b) {
    return write(dir, name, 0, b.data(), b.size());
  };
  bool ok = true;
  Segment header_only;
  ok &= save("header_only", header_only.bytes());
  Segment e;
  e.add(empty, 0);
  ok &= save("empty_batch", e.bytes());
  Segment open;
  open.add(put, 2);
  open.add(big, 1);
  auto open_bytes = open.bytes();
  open_bytes.resize(open_bytes.size() + 64, 0);  // preallocated space reads as zeros
  ok &= save("open_segment", open_bytes);
  auto torn = open.bytes();
  torn.resize(torn.size() - 40);  // the second frame cut by a crash
  ok &= save("torn_tail", torn);
  Segment sealed;
  sealed.add(put, 2);
  sealed.add(big, 1);
  sealed.seal();
  ok &= save("sealed_segment", sealed.bytes());
  return ok;
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

  ok &= wal_seeds(root / "wal_frame_reader");

  const fs::path b = root / "replication_batch";
  using replication::Op;
  ok &= batch(b, "empty_batch", 0, 1, {});
  ok &= batch(b, "one_put", 3, 42, {{Op::put, "user:1", "alice"}});
  ok &= batch(b, "put_and_erase", 1, 7, {{Op::put, "k", "v"}, {Op::erase, "k", ""}});
  ok &= batch(b, "empty_value", 0, 1, {{Op::put, "empty", ""}});
  ok &= batch(b, "long_key", 2, 100,
              {{Op::put, std::string(40, 'k'), std::string(9, 'v')}, {Op::put, "x", "yz"}});
  ok &= batch(b, "write_group", 1, 9,
              {{Op::put, "single", "s"},
               {Op::put, "pair/a", "300", replication::kRecGroupNext},
               {Op::erase, "old", "", replication::kRecGroupNext},
               {Op::put, "pair/b", "700"}});

  const fs::path h = root / "handshake";
  namespace rd = replication::detail;
  const std::string leader = rd::encode(rd::LeaderHello{.carrier = 1,
                                                        .session = 7,
                                                        .shard_count = 4,
                                                        .queue_depth = 64,
                                                        .ring_bytes = 1 << 20,
                                                        .large_bytes = 1 << 24,
                                                        .epoch = 2});
  const std::string follower = rd::encode(rd::FollowerHello{.shard_count = 3,
                                                            .queue_depth = 62,
                                                            .ring_bytes = 1 << 20,
                                                            .large_bytes = 1 << 24,
                                                            .applied = {0, 17, 123456},
                                                            .generation = {0, 1, 1}});
  ok &= write(h, "leader_hello", 1, leader.data(), leader.size());
  ok &= write(h, "follower_hello", 2, follower.data(), follower.size());
  transport::bootstrap::Hello tcp;
  tcp.kind = transport::TransportKind::tcp;
  tcp.node_id = "leader-a";
  tcp.app_data = leader;
  ok &= hello(h, "bootstrap_tcp_leader", tcp);
  transport::bootstrap::Hello verbs;
  verbs.kind = transport::TransportKind::verbs;
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

  const fs::path r = root / "read_request";
  auto request = [&](const std::string& name, const reads::RequestHeader& rh,
                     std::vector<std::string_view> keys) {
    std::vector<uint8_t> bytes(reads::request_size(keys));
    return reads::encode_request(rh, keys, bytes) == bytes.size() &&
           write(r, name, 0, bytes.data(), bytes.size());
  };
  ok &= request("any_one_key", reads::RequestHeader{.request_id = 1, .count = 1}, {"user:1"});
  ok &= request("at_least_three_keys",
                reads::RequestHeader{.request_id = 7,
                                     .count = 3,
                                     .kind = reads::Consistency::Kind::at_least,
                                     .shard = 2,
                                     .min_seq = 4711,
                                     .wait_ms = 50},
                {"a", "", "key-3"});
  ok &= request(
      "leader",
      reads::RequestHeader{.request_id = 9, .count = 1, .kind = reads::Consistency::Kind::leader},
      {"k"});
  std::vector<uint8_t> resp(256);
  reads::ResponseWriter w(resp);
  w.add(reads::EntryStatus::found, "value-1");
  w.add(reads::EntryStatus::not_found, {});
  w.add(reads::EntryStatus::retry, {});
  ok &=
      write(r, "response_three_entries", 1, resp.data(), w.finish(7, reads::ResponseStatus::ok, 0));
  reads::ResponseWriter behind(resp);
  ok &= write(r, "response_behind", 1, resp.data(),
              behind.finish(8, reads::ResponseStatus::behind, 1000));

  if (!ok) {
    std::fprintf(stderr, "make_seeds: could not write the seeds under %s\n", argv[1]);
    return 1;
  }
  return 0;
}
