// Fuzzes the connection handshake parsers: the bootstrap Hello (transport layer) and the
// replication layer's leader and follower hellos carried in its app_data. The first input
// byte picks the parser (0: bootstrap Hello, then its app_data as both replication hellos;
// 1: leader hello; 2: follower hello). Parsing must never crash or read outside the input,
// and whatever a parser accepts must encode again to the same message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "replication/hello.h"
#include "transport/bootstrap/hello.h"

namespace bootstrap = rdmarepl::transport::bootstrap;
namespace repl = rdmarepl::replication::detail;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}

// The replication hellos leave reserved fields unchecked (docs/wire_format.md), so an
// accepted message round-trips field by field rather than byte by byte.
void leader(std::string_view bytes) {
  auto h = repl::parse_leader_hello(bytes, "fuzz");
  if (!h.ok()) {
    check(!h.error().message().empty());
    return;
  }
  check(h->carrier < h->shard_count);
  auto again = repl::parse_leader_hello(repl::encode(*h), "fuzz");
  check(again.ok());
  check(again->carrier == h->carrier && again->session == h->session &&
        again->shard_count == h->shard_count && again->queue_depth == h->queue_depth &&
        again->ring_bytes == h->ring_bytes && again->large_bytes == h->large_bytes &&
        again->epoch == h->epoch);
}

void follower(std::string_view bytes) {
  auto h = repl::parse_follower_hello(bytes, "fuzz");
  if (!h.ok()) {
    check(!h.error().message().empty());
    return;
  }
  check(h->applied.size() == h->shard_count);
  const std::string enc = repl::encode(*h);
  check(enc.size() == bytes.size());
  check(std::memcmp(enc.data() + 8, bytes.data() + 8, enc.size() - 8) == 0);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t raw_size) {
  if (raw_size == 0) return 0;
  // An exactly sized heap copy so that ASan flags any read past the end.
  const std::vector<uint8_t> buf(raw + 1, raw + raw_size);
  const std::string_view text(reinterpret_cast<const char*>(buf.data()), buf.size());
  switch (raw[0] % 3) {
    case 0: {
      auto h = bootstrap::parse_hello(std::span<const uint8_t>(buf.data(), buf.size()));
      if (!h.ok()) {
        check(!h.error().message().empty());
        return 0;
      }
      check(h->node_id.size() <= bootstrap::kMaxNodeIdBytes);
      check(h->transport_blob.size() <= bootstrap::kMaxTransportBlobBytes);
      check(h->regions.size() <= bootstrap::kMaxRegions);
      check(h->app_data.size() <= bootstrap::kMaxAppDataBytes);
      auto enc = bootstrap::serialize_hello(*h);
      check(enc.ok());
      check(*enc == buf);
      leader(h->app_data);
      follower(h->app_data);
      return 0;
    }
    case 1:
      leader(text);
      return 0;
    default:
      follower(text);
      return 0;
  }
}
