// Encoders and parsers of the remote-read messages (docs/reads.md, "Wire format").
#include "read_format.h"

#include <cstring>

#include "rdmarepl/core/byte_order.h"

namespace rdmarepl::reads {

std::string_view to_string(ReadStatus s) noexcept {
  switch (s) {
    case ReadStatus::found:
      return "found";
    case ReadStatus::not_found:
      return "not_found";
    case ReadStatus::behind:
      return "behind";
  }
  return "unknown";
}

void encode_hello(const Hello& h, uint8_t* out) noexcept {
  store_be32(out, h.magic);
  out[4] = kReadsVersion;
  out[5] = h.leader ? 1 : 0;
  store_be16(out + 6, 0);
  store_be32(out + 8, h.queue_depth);
  store_be32(out + 12, h.max_request_bytes);
  store_be32(out + 16, h.max_response_bytes);
}

bool parse_hello(std::string_view in, uint32_t magic, Hello& out, std::string_view& why) noexcept {
  const auto* p = reinterpret_cast<const uint8_t*>(in.data());
  if (in.size() != kHelloBytes || load_be32(p) != magic) {
    why = "the peer is not an rdmarepl read endpoint (its handshake carries no read hello)";
    return false;
  }
  if (p[4] != kReadsVersion) {
    why = "the peer speaks another version of the read protocol; run the same rdmarepl version";
    return false;
  }
  out.magic = magic;
  out.leader = p[5] == 1;
  out.queue_depth = load_be32(p + 8);
  out.max_request_bytes = load_be32(p + 12);
  out.max_response_bytes = load_be32(p + 16);
  return true;
}

size_t request_size(std::span<const std::string_view> keys) noexcept {
  size_t n = kRequestHeaderBytes;
  for (auto k : keys) n += 2 + k.size();
  return n;
}

size_t encode_request(const RequestHeader& h, std::span<const std::string_view> keys,
                      std::span<uint8_t> out) noexcept {
  const size_t need = request_size(keys);
  if (need > out.size() || keys.size() > kMaxKeysPerRequest) return 0;
  uint8_t* p = out.data();
  store_be16(p, kRequestMagic);
  p[2] = kReadsVersion;
  p[3] = 0;
  store_be32(p + 4, h.request_id);
  store_be16(p + 8, static_cast<uint16_t>(keys.size()));
  p[10] = static_cast<uint8_t>(h.kind);
  p[11] = 0;
  store_be32(p + 12, h.shard);
  store_be64(p + 16, h.min_seq);
  store_be32(p + 24, h.wait_ms);
  size_t at = kRequestHeaderBytes;
  for (auto k : keys) {
    if (k.size() > kMaxReadKeyBytes || k.size() > UINT16_MAX) return 0;
    store_be16(p + at, static_cast<uint16_t>(k.size()));
    if (!k.empty()) std::memcpy(p + at + 2, k.data(), k.size());
    at += 2 + k.size();
  }
  return at;
}

uint32_t peek_request_id(std::span<const uint8_t> msg) noexcept {
  return msg.size() >= 8 ? load_be32(msg.data() + 4) : 0;
}

bool parse_request(std::span<const uint8_t> msg, RequestHeader& h,
                   std::span<std::string_view> keys_out, std::string_view& why) noexcept {
  if (msg.size() < kRequestHeaderBytes) {
    why = "shorter than a request header (truncated)";
    return false;
  }
  const uint8_t* p = msg.data();
  if (load_be16(p) != kRequestMagic) {
    why = "bad magic (not a read request)";
    return false;
  }
  if (p[2] != kReadsVersion) {
    why = "unknown read protocol version";
    return false;
  }
  if (p[3] != 0 || p[11] != 0) {
    why = "non-zero reserved bits";
    return false;
  }
  h.request_id = load_be32(p + 4);
  h.count = load_be16(p + 8);
  if (p[10] > static_cast<uint8_t>(Consistency::Kind::leader)) {
    why = "unknown consistency";
    return false;
  }
  h.kind = static_cast<Consistency::Kind>(p[10]);
  h.shard = load_be32(p + 12);
  h.min_seq = load_be64(p + 16);
  h.wait_ms = load_be32(p + 24);
  if (h.count == 0 || h.count > kMaxKeysPerRequest || h.count > keys_out.size()) {
    why = "key count is 0 or over the limit (1024)";
    return false;
  }
  size_t at = kRequestHeaderBytes;
  for (uint16_t i = 0; i < h.count; ++i) {
    if (msg.size() - at < 2) {
      why = "a key length runs past the end of the message (truncated)";
      return false;
    }
    const size_t len = load_be16(p + at);
    at += 2;
    if (msg.size() - at < len) {
      why = "a key runs past the end of the message (truncated)";
      return false;
    }
    keys_out[i] = std::string_view(reinterpret_cast<const char*>(p + at), len);
    at += len;
  }
  if (at != msg.size()) {
    why = "bytes left over after the last key";
    return false;
  }
  return true;
}

bool ResponseWriter::fits(size_t value_bytes) const noexcept {
  return count_ < UINT16_MAX && out_.size() - at_ >= kResponseEntryBytes + value_bytes;
}

void ResponseWriter::add(EntryStatus s, std::string_view value) noexcept {
  uint8_t* p = out_.data() + at_;
  const size_t n = s == EntryStatus::found ? value.size() : 0;
  p[0] = static_cast<uint8_t>(s);
  store_be32(p + 1, static_cast<uint32_t>(n));
  if (n > 0) std::memcpy(p + kResponseEntryBytes, value.data(), n);
  at_ += kResponseEntryBytes + n;
  ++count_;
}

size_t ResponseWriter::finish(uint32_t request_id, ResponseStatus s, uint64_t behind_by) noexcept {
  uint8_t* p = out_.data();
  store_be16(p, kResponseMagic);
  p[2] = kReadsVersion;
  p[3] = static_cast<uint8_t>(s);
  store_be32(p + 4, request_id);
  store_be16(p + 8, count_);
  store_be16(p + 10, 0);
  store_be64(p + 12, behind_by);
  return at_;
}

bool ResponseReader::open(std::span<const uint8_t> msg, ResponseHeader& h,
                          std::string_view& why) noexcept {
  msg_ = msg;
  at_ = kResponseHeaderBytes;
  if (msg.size() < kResponseHeaderBytes) {
    why = "shorter than a response header";
    return false;
  }
  const uint8_t* p = msg.data();
  if (load_be16(p) != kResponseMagic || p[2] != kReadsVersion) {
    why = "bad magic or version (not a read response of this version)";
    return false;
  }
  if (p[3] > static_cast<uint8_t>(ResponseStatus::not_leader)) {
    why = "unknown response status";
    return false;
  }
  h.status = static_cast<ResponseStatus>(p[3]);
  h.request_id = load_be32(p + 4);
  h.count = load_be16(p + 8);
  h.behind_by = load_be64(p + 12);
  return true;
}

bool ResponseReader::next(ResponseEntry& e, std::string_view& why) noexcept {
  if (msg_.size() - at_ < kResponseEntryBytes) {
    why = "an entry runs past the end of the response";
    return false;
  }
  const uint8_t* p = msg_.data() + at_;
  if (p[0] > static_cast<uint8_t>(EntryStatus::too_large)) {
    why = "unknown entry status";
    return false;
  }
  e.status = static_cast<EntryStatus>(p[0]);
  const uint32_t len = load_be32(p + 1);
  at_ += kResponseEntryBytes;
  if (msg_.size() - at_ < len || (len > 0 && e.status != EntryStatus::found)) {
    why = "a value runs past the end of the response";
    return false;
  }
  e.value = std::string_view(reinterpret_cast<const char*>(msg_.data() + at_), len);
  at_ += len;
  return true;
}

}  // namespace rdmarepl::reads
