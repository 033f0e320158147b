#include "probe.h"

#include <fmt/format.h>

#include <array>

#include "rdmarepl/core/byte_order.h"

namespace rdmarepl::replication::detail {
namespace {

using transport::Completion;
using transport::Connection;
using transport::PostStatus;
using transport::WcOpcode;
using transport::WcStatus;

constexpr uint32_t kProbeMagic = 0x52504C50u;  // "RPLP"
// The replication handshake's version (hello.cc); probes were added in it without
// changing the leader and follower Hellos.
constexpr uint16_t kProbeVersion = 5;

// A zero-length write-with-immediate: it touches no memory of the peer, so it needs no
// region (the transports check none for an empty write).
PostStatus post_imm(Connection& c, uint32_t imm, bool signaled) noexcept {
  transport::WriteRequest w;
  w.wr_id = imm;
  w.imm = imm;
  w.signaled = signaled;
  if (!c.peer().regions.empty()) {
    w.remote_addr = c.peer().regions.front().addr;
    w.rkey = c.peer().regions.front().rkey;
  }
  return c.post_writes({&w, 1});
}

}  // namespace

std::string encode_probe_hello() {
  std::string out(kProbeHelloSize, '\0');
  store_be32(out.data(), kProbeMagic);
  store_be16(out.data() + 4, kProbeVersion);
  return out;
}

bool is_probe_hello(std::string_view b) noexcept {
  return b.size() >= 4 && load_be32(b.data()) == kProbeMagic;
}

Status parse_probe_hello(std::string_view b, std::string_view peer) {
  auto bad = [&](const std::string& what) {
    return Error(Errc::protocol_error, fmt::format("probe from {}: {}", peer, what));
  };
  if (!is_probe_hello(b) || b.size() < 6) return bad("probe hello has a bad magic");
  if (load_be16(b.data() + 4) != kProbeVersion)
    return bad(
        fmt::format("probe hello version {} (this build speaks {}); run the "
                    "rdmarepl-doctor of this follower's build",
                    load_be16(b.data() + 4), kProbeVersion));
  if (b.size() != kProbeHelloSize || load_be16(b.data() + 6) != 0)
    return bad(fmt::format("probe hello is {} bytes (reserved {}), expected {} (reserved 0)",
                           b.size(), b.size() >= 8 ? load_be16(b.data() + 6) : 0, kProbeHelloSize));
  return ok_status();
}

Status answer_probe(Connection& c, Deadline deadline) {
  std::array<Completion, 8> wc;
  bool answered = false;
  while (!deadline.expired()) {
    (void)c.wait(std::chrono::milliseconds(10));
    const size_t n = c.poll(wc);
    for (size_t i = 0; i < n; ++i) {
      if (wc[i].status != WcStatus::success)
        return Error(Errc::connection_closed, failure_reason(c, wc[i].status));
      if (wc[i].opcode == WcOpcode::rdma_write && answered) return ok_status();
      if (wc[i].opcode != WcOpcode::recv_rdma_with_imm || answered) continue;
      if (wc[i].byte_len != 0)
        return Error(Errc::protocol_error,
                     fmt::format("the probe wrote {} bytes; a probe writes none", wc[i].byte_len));
      if (post_imm(c, wc[i].imm + 1, true) != PostStatus::ok)
        return Error(Errc::connection_closed, c.error().message());
      answered = true;
    }
  }
  return Error(Errc::timeout, answered ? "the answer's completion did not arrive in time"
                                       : "the prober sent no write-with-immediate in time");
}

std::string await_imm(Connection& c, uint32_t imm, Deadline deadline, std::string_view on_timeout) {
  std::array<Completion, 8> wc;
  while (!deadline.expired()) {
    (void)c.wait(std::chrono::milliseconds(10));
    const size_t n = c.poll(wc);
    for (size_t i = 0; i < n; ++i) {
      if (wc[i].status != WcStatus::success) return failure_reason(c, wc[i].status);
      if (wc[i].opcode == WcOpcode::recv_rdma_with_imm && wc[i].imm == imm) return "";
    }
  }
  return std::string(on_timeout);
}

std::string probe_round_trip(Connection& c, uint32_t imm, Deadline deadline) {
  if (post_imm(c, imm, false) != PostStatus::ok) return c.error().message();
  return await_imm(c, imm + 1, deadline, "no answer arrived in time: see the follower's log");
}

}  // namespace rdmarepl::replication::detail
