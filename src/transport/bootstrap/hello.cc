#include "transport/bootstrap/hello.h"

#include <fmt/format.h>

#include "rdmarepl/core/byte_order.h"

namespace rdmarepl::transport::bootstrap {
namespace {

// A bounds-checked reader over the input: every take() checks the remaining length first.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) noexcept : bytes_(bytes) {}
  [[nodiscard]] size_t remaining() const noexcept { return bytes_.size() - pos_; }
  [[nodiscard]] size_t position() const noexcept { return pos_; }
  bool take(size_t n, const uint8_t*& out) noexcept {
    if (n > remaining()) return false;
    out = bytes_.data() + pos_;
    pos_ += n;
    return true;
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

Error malformed(std::string_view what, size_t offset) {
  return Error(Errc::protocol_error,
               fmt::format("malformed Hello at byte {}: {}; the peer does not speak rdmarepl "
                           "bootstrap version {} (or the message was corrupted)",
                           offset, what, kProtocolVersion));
}

}  // namespace

Result<std::vector<uint8_t>> serialize_hello(const Hello& hello) {
  auto too_big = [](std::string_view field, size_t size, size_t limit) {
    return Error(Errc::too_large, fmt::format("Hello field {} has {} bytes/items, the limit is {}; "
                                              "shorten it",
                                              field, size, limit));
  };
  if (hello.kind != TransportKind::tcp && hello.kind != TransportKind::verbs)
    return Error(Errc::invalid_argument,
                 fmt::format("Hello kind is {}; a connection's Hello names its real transport "
                             "(tcp or verbs), not a choice",
                             to_string(hello.kind)));
  if (hello.node_id.size() > kMaxNodeIdBytes)
    return too_big("node_id", hello.node_id.size(), kMaxNodeIdBytes);
  if (hello.transport_blob.size() > kMaxTransportBlobBytes)
    return too_big("transport_blob", hello.transport_blob.size(), kMaxTransportBlobBytes);
  if (hello.regions.size() > kMaxRegions)
    return too_big("regions", hello.regions.size(), kMaxRegions);
  if (hello.app_data.size() > kMaxAppDataBytes)
    return too_big("app_data", hello.app_data.size(), kMaxAppDataBytes);

  std::vector<uint8_t> out(kHelloFixedBytes + hello.node_id.size() + hello.transport_blob.size() +
                           hello.regions.size() * RemoteRegion::kWireSize + hello.app_data.size());
  uint8_t* p = out.data();
  store_be16(p, hello.version);
  p[2] = static_cast<uint8_t>(hello.kind);
  p[3] = 0;  // flags: none defined
  p += 4;
  store_be16(p, static_cast<uint16_t>(hello.node_id.size()));
  p += 2;
  std::memcpy(p, hello.node_id.data(), hello.node_id.size());
  p += hello.node_id.size();
  store_be16(p, static_cast<uint16_t>(hello.transport_blob.size()));
  p += 2;
  if (!hello.transport_blob.empty())
    std::memcpy(p, hello.transport_blob.data(), hello.transport_blob.size());
  p += hello.transport_blob.size();
  store_be32(p, static_cast<uint32_t>(hello.regions.size()));
  p += 4;
  for (const auto& r : hello.regions) {
    r.serialize(p);
    p += RemoteRegion::kWireSize;
  }
  store_be32(p, static_cast<uint32_t>(hello.app_data.size()));
  p += 4;
  std::memcpy(p, hello.app_data.data(), hello.app_data.size());
  return out;
}

Result<Hello> parse_hello(std::span<const uint8_t> bytes) {
  Reader in(bytes);
  const uint8_t* p = nullptr;
  Hello h;
  if (!in.take(4, p)) return malformed("shorter than the 4-byte header", in.position());
  h.version = load_be16(p);
  if (h.version != kProtocolVersion) {
    return Error(Errc::unsupported,
                 fmt::format("Hello has protocol version {}, we speak version {}; run the same "
                             "rdmarepl release on both nodes",
                             h.version, kProtocolVersion));
  }
  if (p[2] != static_cast<uint8_t>(TransportKind::tcp) &&
      p[2] != static_cast<uint8_t>(TransportKind::verbs))
    return malformed(fmt::format("unknown transport kind {}", p[2]), 2);
  h.kind = static_cast<TransportKind>(p[2]);
  if (p[3] != 0) return malformed(fmt::format("unknown flags 0x{:02x}", p[3]), 3);

  if (!in.take(2, p)) return malformed("truncated node_id length", in.position());
  size_t n = load_be16(p);
  if (n > kMaxNodeIdBytes)
    return malformed(fmt::format("node_id length {} exceeds {}", n, kMaxNodeIdBytes), 4);
  if (!in.take(n, p))
    return malformed(fmt::format("node_id of {} bytes is truncated", n), in.position());
  h.node_id.assign(reinterpret_cast<const char*>(p), n);

  size_t at = in.position();
  if (!in.take(2, p)) return malformed("truncated transport_blob length", at);
  n = load_be16(p);
  if (n > kMaxTransportBlobBytes)
    return malformed(fmt::format("transport_blob length {} exceeds {}", n, kMaxTransportBlobBytes),
                     at);
  if (!in.take(n, p))
    return malformed(fmt::format("transport_blob of {} bytes is truncated", n), in.position());
  h.transport_blob.assign(p, p + n);

  at = in.position();
  if (!in.take(4, p)) return malformed("truncated region count", at);
  n = load_be32(p);
  if (n > kMaxRegions)
    return malformed(fmt::format("region count {} exceeds {}", n, kMaxRegions), at);
  if (n * RemoteRegion::kWireSize > in.remaining())
    return malformed(fmt::format("{} regions are truncated", n), in.position());
  h.regions.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    in.take(RemoteRegion::kWireSize, p);
    h.regions.push_back(RemoteRegion::deserialize(p));
  }

  at = in.position();
  if (!in.take(4, p)) return malformed("truncated app_data length", at);
  n = load_be32(p);
  if (n > kMaxAppDataBytes)
    return malformed(fmt::format("app_data length {} exceeds {}", n, kMaxAppDataBytes), at);
  if (!in.take(n, p))
    return malformed(fmt::format("app_data of {} bytes is truncated", n), in.position());
  h.app_data.assign(reinterpret_cast<const char*>(p), n);

  if (in.remaining() != 0)
    return malformed(fmt::format("{} trailing bytes after app_data", in.remaining()),
                     in.position());
  return h;
}

}  // namespace rdmarepl::transport::bootstrap
