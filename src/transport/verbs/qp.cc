#include "transport/verbs/qp.h"

#include <fmt/format.h>

#include <random>

#include "rdmarepl/core/byte_order.h"
#include "transport/verbs/device.h"

namespace rdmarepl::transport::verbs {

std::vector<uint8_t> QpEndpoint::serialize() const {
  std::vector<uint8_t> out(kWireSize, 0);
  out[0] = kWireVersion;
  out[1] = link_layer;
  out[2] = mtu;
  store_be32(out.data() + 4, qpn);
  store_be32(out.data() + 8, psn);
  store_be16(out.data() + 12, lid);
  std::copy(std::begin(gid.raw), std::end(gid.raw), out.begin() + 14);
  return out;
}

Result<QpEndpoint> QpEndpoint::parse(std::span<const uint8_t> bytes) {
  if (bytes.size() != kWireSize) {
    return Error(Errc::protocol_error,
                 fmt::format("verbs connection blob has {} bytes, expected {}; the peer runs an "
                             "incompatible version",
                             bytes.size(), kWireSize));
  }
  if (bytes[0] != kWireVersion) {
    return Error(Errc::unsupported, fmt::format("verbs connection blob version {}, we speak {}; "
                                                "upgrade the older side",
                                                bytes[0], kWireVersion));
  }
  QpEndpoint e;
  e.link_layer = bytes[1];
  e.mtu = bytes[2];
  if (e.mtu < IBV_MTU_256 || e.mtu > IBV_MTU_4096)
    return Error(Errc::protocol_error, fmt::format("peer sent invalid MTU code {}", e.mtu));
  e.qpn = load_be32(bytes.data() + 4);
  e.psn = load_be32(bytes.data() + 8);
  if (e.qpn == 0 || e.qpn > 0xffffff || e.psn > 0xffffff)
    return Error(Errc::protocol_error,
                 fmt::format("peer sent QPN {:#x} / PSN {:#x}: not 24-bit values", e.qpn, e.psn));
  e.lid = load_be16(bytes.data() + 12);
  std::copy(bytes.begin() + 14, bytes.end(), std::begin(e.gid.raw));
  return e;
}

uint32_t random_psn() {
  static thread_local std::mt19937 gen{std::random_device{}()};
  return std::uniform_int_distribution<uint32_t>(0, 0xffffff)(gen);
}

Status qp_to_init(ibv_qp* qp, const Device& device, int access_flags, std::string_view what) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = device.port();
  attr.qp_access_flags = static_cast<unsigned>(access_flags);
  int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  if (int rc = ibv_modify_qp(qp, &attr, mask); rc != 0) {
    return errno_error(rc, fmt::format("{}: QP {:#x} RESET->INIT failed (port {}, access {:#x})",
                                       what, qp->qp_num, device.port(), access_flags));
  }
  return {};
}

Status qp_to_rtr(ibv_qp* qp, const Device& device, const QpEndpoint& remote, ibv_mtu mtu,
                 const QpTuning& tuning, std::string_view what) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = mtu;
  attr.dest_qp_num = remote.qpn;
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = tuning.max_rd_atomic;
  attr.min_rnr_timer = tuning.min_rnr_timer;
  attr.ah_attr.port_num = device.port();
  attr.ah_attr.sl = tuning.service_level;
  const bool global = device.is_roce();
  if (global) {
    // RoCE has no LIDs: the GRH carries the addressing (RoCE v2 -> UDP/IP).
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.dgid = remote.gid;
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(device.gid_index());
    attr.ah_attr.grh.hop_limit = tuning.hop_limit;
    attr.ah_attr.grh.traffic_class = tuning.traffic_class;
  } else {
    attr.ah_attr.dlid = remote.lid;
  }
  int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  if (int rc = ibv_modify_qp(qp, &attr, mask); rc != 0) {
    return errno_error(
        rc, fmt::format("{}: QP {:#x} INIT->RTR failed (dest QPN {:#x}, rq PSN {:#x}, path MTU "
                        "{}, {} {}, sgid index {}, port {})",
                        what, qp->qp_num, remote.qpn, remote.psn, to_string(mtu),
                        global ? "dgid" : "dlid",
                        global ? gid_to_string(remote.gid) : std::to_string(remote.lid),
                        device.gid_index(), device.port()));
  }
  return {};
}

Status qp_to_rts(ibv_qp* qp, uint32_t local_psn, const QpTuning& tuning, std::string_view what) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = local_psn;
  attr.timeout = tuning.timeout;
  attr.retry_cnt = tuning.retry_cnt;
  attr.rnr_retry = tuning.rnr_retry;
  attr.max_rd_atomic = tuning.max_rd_atomic;
  int mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
             IBV_QP_MAX_QP_RD_ATOMIC;
  if (int rc = ibv_modify_qp(qp, &attr, mask); rc != 0) {
    return errno_error(rc, fmt::format("{}: QP {:#x} RTR->RTS failed (sq PSN {:#x}, timeout {}, "
                                       "retry_cnt {}, rnr_retry {}, max_rd_atomic {})",
                                       what, qp->qp_num, local_psn, tuning.timeout,
                                       tuning.retry_cnt, tuning.rnr_retry, tuning.max_rd_atomic));
  }
  return {};
}

Status qp_to_error(ibv_qp* qp) noexcept {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  if (int rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE); rc != 0)
    return Error(std::error_code(rc, std::generic_category()), "ibv_modify_qp(ERR) failed");
  return {};
}

ibv_qp_state qp_state(ibv_qp* qp) noexcept {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init) != 0) return IBV_QPS_ERR;
  return attr.qp_state;
}

std::string_view to_string(ibv_qp_state state) noexcept {
  switch (state) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_RTS:
      return "RTS";
    case IBV_QPS_SQD:
      return "SQD";
    case IBV_QPS_SQE:
      return "SQE";
    case IBV_QPS_ERR:
      return "ERR";
    case IBV_QPS_UNKNOWN:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

WcStatus to_wc_status(ibv_wc_status status) noexcept {
  switch (status) {
    case IBV_WC_SUCCESS:
      return WcStatus::success;
    case IBV_WC_LOC_LEN_ERR:
      return WcStatus::local_length_error;
    case IBV_WC_LOC_QP_OP_ERR:
      return WcStatus::local_qp_error;
    case IBV_WC_LOC_EEC_OP_ERR:
      return WcStatus::local_qp_error;
    case IBV_WC_LOC_PROT_ERR:
      return WcStatus::local_protection_error;
    case IBV_WC_WR_FLUSH_ERR:
      return WcStatus::flushed;
    case IBV_WC_MW_BIND_ERR:
      return WcStatus::local_protection_error;
    case IBV_WC_BAD_RESP_ERR:
      return WcStatus::remote_invalid_request;
    case IBV_WC_LOC_ACCESS_ERR:
      return WcStatus::local_protection_error;
    case IBV_WC_REM_INV_REQ_ERR:
      return WcStatus::remote_invalid_request;
    case IBV_WC_REM_ACCESS_ERR:
      return WcStatus::remote_access_error;
    case IBV_WC_REM_OP_ERR:
      return WcStatus::remote_operation_error;
    case IBV_WC_RETRY_EXC_ERR:
      return WcStatus::retry_exceeded;
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return WcStatus::rnr_retry_exceeded;
    case IBV_WC_LOC_RDD_VIOL_ERR:
      return WcStatus::local_protection_error;
    case IBV_WC_REM_INV_RD_REQ_ERR:
      return WcStatus::remote_invalid_request;
    case IBV_WC_REM_ABORT_ERR:
      return WcStatus::remote_operation_error;
    case IBV_WC_INV_EECN_ERR:
      return WcStatus::remote_invalid_request;
    case IBV_WC_INV_EEC_STATE_ERR:
      return WcStatus::remote_invalid_request;
    case IBV_WC_FATAL_ERR:
      return WcStatus::fatal;
    case IBV_WC_RESP_TIMEOUT_ERR:
      return WcStatus::retry_exceeded;
    case IBV_WC_GENERAL_ERR:
      return WcStatus::fatal;
    case IBV_WC_TM_ERR:
      return WcStatus::fatal;
    case IBV_WC_TM_RNDV_INCOMPLETE:
      return WcStatus::fatal;
  }
  return WcStatus::fatal;
}

}  // namespace rdmarepl::transport::verbs
