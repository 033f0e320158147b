// RC queue-pair set-up: what each side tells the other (QpEndpoint, carried in the bootstrap
// Hello's transport blob), the tunables of the reliable transport, and the
// RESET -> INIT -> RTR -> RTS transitions. A failed transition reports the attributes it
// tried (GID index, MTU, PSN ...), because those are what is usually wrong.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/types.h"

namespace rdmarepl::transport::verbs {

class Device;

// Reliable-connection tunables. Time to declare a peer dead is about
// (retry_cnt + 1) x 4.096 us x 2^timeout: 7 x 67 ms ~ 0.5 s with the defaults.
struct QpTuning {
  uint8_t timeout = 14;   // local ACK timeout exponent; 0 disables the retransmit timer
  uint8_t retry_cnt = 6;  // 7 means retry forever on some devices (rxe): avoid
  // A write that finds no receive posted is retried rnr_retry times, min_rnr_timer apart,
  // then fails as rnr_retry_exceeded (the transport contract; 7 would retry forever).
  uint8_t rnr_retry = 6;
  uint8_t min_rnr_timer = 14;  // 1.28 ms between RNR retries
  uint8_t max_rd_atomic = 1;   // outstanding RDMA reads/atomics (we only write)
  uint8_t hop_limit = 64;
  uint8_t traffic_class = 0;
  uint8_t service_level = 0;
};

// One side's addressing of its QP (sent to the peer in the handshake).
struct QpEndpoint {
  uint32_t qpn = 0;
  uint32_t psn = 0;            // 24 bits
  uint16_t lid = 0;            // InfiniBand addressing
  ibv_gid gid{};               // RoCE addressing (RoCE v2: always through the GRH)
  uint8_t mtu = IBV_MTU_1024;  // the port's active_mtu (ibv_mtu value)
  uint8_t link_layer = IBV_LINK_LAYER_ETHERNET;

  // version u8 | link_layer u8 | mtu u8 | reserved u8 | qpn u32 | psn u32 | lid u16 | gid 16
  static constexpr size_t kWireSize = 30;
  static constexpr uint8_t kWireVersion = 1;
  [[nodiscard]] std::vector<uint8_t> serialize() const;
  // Errc::protocol_error naming the field when `bytes` is not a QpEndpoint.
  static Result<QpEndpoint> parse(std::span<const uint8_t> bytes);
};

// The path MTU both ports can carry: the smaller active_mtu. (rxe hangs silently when the
// path MTU exceeds what the link carries.)
inline ibv_mtu path_mtu(uint8_t local, uint8_t remote) noexcept {
  return static_cast<ibv_mtu>(local < remote ? local : remote);
}

// A random 24-bit starting PSN.
uint32_t random_psn();

// Transitions of an RC QP. `what` names the connection in error messages.
Status qp_to_init(ibv_qp* qp, const Device& device, int access_flags, std::string_view what);
Status qp_to_rtr(ibv_qp* qp, const Device& device, const QpEndpoint& remote, ibv_mtu mtu,
                 const QpTuning& tuning, std::string_view what);
Status qp_to_rts(ibv_qp* qp, uint32_t local_psn, const QpTuning& tuning, std::string_view what);
// Moves the QP to the error state so outstanding work requests complete as flushed.
Status qp_to_error(ibv_qp* qp) noexcept;
// Current state of the QP (IBV_QPS_ERR on query failure).
ibv_qp_state qp_state(ibv_qp* qp) noexcept;
std::string_view to_string(ibv_qp_state state) noexcept;

// ibv_wc_status -> WcStatus. Every status has a mapping; unknown values map to `fatal`.
WcStatus to_wc_status(ibv_wc_status status) noexcept;

}  // namespace rdmarepl::transport::verbs
