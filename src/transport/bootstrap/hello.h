// The Hello message of the bootstrap handshake: what each side of a new connection tells
// the other. The byte layout is documented in docs/wire_format.md ("Bootstrap handshake");
// every integer is big-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/kind.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::transport::bootstrap {

// Version of the handshake and of the framing that follows it. A peer speaking another
// version is refused with a message naming both versions.
inline constexpr uint16_t kProtocolVersion = 1;

// Field limits. They bound what a peer can make us allocate before authentication.
inline constexpr size_t kMaxNodeIdBytes = 255;
inline constexpr size_t kMaxTransportBlobBytes = 1024;  // verbs needs ~40 (QPN, PSN, GID...)
inline constexpr size_t kMaxRegions = 4096;             // 64 KiB of descriptors
inline constexpr size_t kMaxAppDataBytes = 64 * 1024;   // ConnectionOptions::app_data limit
// version u16 | kind u8 | flags u8 | node_id_len u16 | blob_len u16 | region_count u32 |
// app_data_len u32: the fixed part of a Hello.
inline constexpr size_t kHelloFixedBytes = 2 + 1 + 1 + 2 + 2 + 4 + 4;
inline constexpr size_t kMaxHelloBytes = kHelloFixedBytes + kMaxNodeIdBytes +
                                         kMaxTransportBlobBytes +
                                         kMaxRegions * RemoteRegion::kWireSize + kMaxAppDataBytes;

struct Hello {
  uint16_t version = kProtocolVersion;
  TransportKind kind = TransportKind::tcp;  // tcp or verbs, never automatic
  std::string node_id;                      // the sender's identity (for messages and logs)
  std::vector<uint8_t> transport_blob;      // transport-specific (verbs: QPN, PSN, GID, LID, MTU)
  std::vector<RemoteRegion> regions;        // regions the sender lets the receiver write into
  std::string app_data;                     // opaque bytes for the layer above

  friend bool operator==(const Hello&, const Hello&) = default;
};

// Encodes `hello`; fails when a field exceeds its limit (the message names it).
Result<std::vector<uint8_t>> serialize_hello(const Hello& hello);

// Decodes a Hello. Pure and total: any byte sequence yields a Hello or an Error that names
// the offending field (Errc::protocol_error); it never reads outside `bytes`, never
// allocates more than the limits above allow, and rejects trailing bytes.
Result<Hello> parse_hello(std::span<const uint8_t> bytes);

}  // namespace rdmarepl::transport::bootstrap
