// The messages of remote reads: requests (client to replica) and responses, each one
// transport Send. docs/reads.md ("Wire format") is the truth; this header mirrors it. Every
// integer is big-endian. The parsers check every length against the message before use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "rdmarepl/reads/consistency.h"

namespace rdmarepl::reads {

inline constexpr uint16_t kRequestMagic = 0x5251;   // "RQ"
inline constexpr uint16_t kResponseMagic = 0x5253;  // "RS"
inline constexpr uint8_t kReadsVersion = 1;
inline constexpr size_t kRequestHeaderBytes = 28;
inline constexpr size_t kResponseHeaderBytes = 20;
inline constexpr size_t kResponseEntryBytes = 5;  // status u8, value length u32
inline constexpr uint32_t kMaxKeysPerRequest = 1024;
inline constexpr uint32_t kMaxReadKeyBytes = 64 * 1024;  // replication::kMaxKeyBytes

// Handshake app_data of both sides: magic, version, role, reserved, three u32 limits.
inline constexpr size_t kHelloBytes = 20;
inline constexpr uint32_t kServerHelloMagic = 0x52445253;  // "RDRS"
inline constexpr uint32_t kClientHelloMagic = 0x52445243;  // "RDRC"

enum class ResponseStatus : uint8_t {
  ok = 0,
  behind = 1,       // at_least not reached within the wait; behind_by says by how much
  bad_request = 2,  // the request was malformed; no entries follow
  not_leader = 3,   // Consistency::leader sent to a replica that is not the leader
};

enum class EntryStatus : uint8_t {
  not_found = 0,
  found = 1,
  retry = 2,      // did not fit in this response: ask again (no value bytes)
  too_large = 3,  // the value exceeds the largest response this replica sends
};

struct RequestHeader {
  uint32_t request_id = 0;
  uint16_t count = 0;
  Consistency::Kind kind = Consistency::Kind::any;
  uint32_t shard = 0;
  uint64_t min_seq = 0;
  uint32_t wait_ms = 0;
};

struct Hello {
  uint32_t magic = 0;
  bool leader = false;
  uint32_t queue_depth = 0;
  uint32_t max_request_bytes = 0;
  uint32_t max_response_bytes = 0;
};
void encode_hello(const Hello& h, uint8_t* out) noexcept;
// False (with `why`) unless `in` is a hello of this version with the expected magic.
bool parse_hello(std::string_view in, uint32_t magic, Hello& out, std::string_view& why) noexcept;

// Bytes of a request for `keys`.
size_t request_size(std::span<const std::string_view> keys) noexcept;
// Encodes into `out`; returns the bytes written, 0 when it does not fit.
size_t encode_request(const RequestHeader& h, std::span<const std::string_view> keys,
                      std::span<uint8_t> out) noexcept;
// Parses a whole request message. On success fills `h` and keys_out[0, h.count) with views
// into `msg`; else returns false with `why` (a static text). keys_out holds
// kMaxKeysPerRequest views.
bool parse_request(std::span<const uint8_t> msg, RequestHeader& h,
                   std::span<std::string_view> keys_out, std::string_view& why) noexcept;
// The request id of a message too broken to parse (0 when it is shorter than the id).
uint32_t peek_request_id(std::span<const uint8_t> msg) noexcept;

// Fills a response in place: entries first, header last.
class ResponseWriter {
 public:
  explicit ResponseWriter(std::span<uint8_t> out) noexcept : out_(out) {}
  // Room for an entry with a value of `value_bytes` bytes.
  [[nodiscard]] bool fits(size_t value_bytes) const noexcept;
  // Appends an entry (value only for `found`). Requires fits().
  void add(EntryStatus s, std::string_view value) noexcept;
  // Writes the header; returns the message's size.
  size_t finish(uint32_t request_id, ResponseStatus s, uint64_t behind_by) noexcept;
  [[nodiscard]] uint16_t count() const noexcept { return count_; }

 private:
  std::span<uint8_t> out_;
  size_t at_ = kResponseHeaderBytes;
  uint16_t count_ = 0;
};

struct ResponseHeader {
  uint32_t request_id = 0;
  ResponseStatus status = ResponseStatus::ok;
  uint16_t count = 0;
  uint64_t behind_by = 0;
};
struct ResponseEntry {
  EntryStatus status = EntryStatus::not_found;
  std::string_view value;
};
// Walks a response message: header first, then next() per entry; every length checked.
class ResponseReader {
 public:
  // False (with `why`) when the header is malformed.
  bool open(std::span<const uint8_t> msg, ResponseHeader& h, std::string_view& why) noexcept;
  // False (with `why`) when the entry runs past the message or has an unknown status.
  bool next(ResponseEntry& e, std::string_view& why) noexcept;
  // True when every entry was read and nothing is left over.
  [[nodiscard]] bool at_end() const noexcept { return at_ == msg_.size(); }

 private:
  std::span<const uint8_t> msg_;
  size_t at_ = 0;
};

}  // namespace rdmarepl::reads
