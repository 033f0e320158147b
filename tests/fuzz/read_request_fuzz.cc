// Fuzzes the remote-read message parsers: selector byte 0 (even) parses the rest as a read
// request (parse_request), 1 (odd) as a read response (ResponseReader). Parsing must never
// crash or read outside the input; a request it accepts must re-encode to the same bytes,
// and a response's entries must lie inside the input, in order.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "reads/read_format.h"

using namespace rdmarepl::reads;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}

void fuzz_request(const std::vector<uint8_t>& msg) {
  RequestHeader h;
  std::vector<std::string_view> keys(kMaxKeysPerRequest);
  std::string_view why;
  if (!parse_request(msg, h, keys, why)) {
    check(!why.empty());
    return;
  }
  check(h.count >= 1 && h.count <= kMaxKeysPerRequest);
  for (uint16_t i = 0; i < h.count; ++i) {
    const auto* p = reinterpret_cast<const uint8_t*>(keys[i].data());
    check(keys[i].empty() || (p >= msg.data() && p + keys[i].size() <= msg.data() + msg.size()));
  }
  std::vector<uint8_t> again(msg.size());
  check(encode_request(h, std::span(keys.data(), h.count), again) == msg.size());
  check(std::memcmp(again.data(), msg.data(), msg.size()) == 0);
}

void fuzz_response(const std::vector<uint8_t>& msg) {
  ResponseReader r;
  ResponseHeader h;
  std::string_view why;
  if (!r.open(msg, h, why)) {
    check(!why.empty());
    return;
  }
  const uint8_t* last = msg.data() + kResponseHeaderBytes;
  for (uint32_t i = 0; i < h.count; ++i) {
    ResponseEntry e;
    if (!r.next(e, why)) {
      check(!why.empty());
      return;
    }
    const auto* p = reinterpret_cast<const uint8_t*>(e.value.data());
    check(e.value.empty() || (p >= last && p + e.value.size() <= msg.data() + msg.size()));
    if (!e.value.empty()) last = p + e.value.size();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t raw_size) {
  if (raw_size == 0) return 0;
  // An exactly sized heap copy so that ASan flags any read past the end.
  std::vector<uint8_t> msg(raw + 1, raw + raw_size);
  if ((raw[0] & 1) == 0)
    fuzz_request(msg);
  else
    fuzz_response(msg);
  return 0;
}
