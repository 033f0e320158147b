#include "rdmarepl/transport/types.h"

namespace rdmarepl::transport {

std::string_view to_string(WcStatus s) noexcept {
  switch (s) {
    case WcStatus::success:
      return "IBV_WC_SUCCESS";
    case WcStatus::local_length_error:
      return "IBV_WC_LOC_LEN_ERR";
    case WcStatus::local_qp_error:
      return "IBV_WC_LOC_QP_OP_ERR";
    case WcStatus::local_protection_error:
      return "IBV_WC_LOC_PROT_ERR";
    case WcStatus::flushed:
      return "IBV_WC_WR_FLUSH_ERR";
    case WcStatus::remote_access_error:
      return "IBV_WC_REM_ACCESS_ERR";
    case WcStatus::remote_invalid_request:
      return "IBV_WC_REM_INV_REQ_ERR";
    case WcStatus::remote_operation_error:
      return "IBV_WC_REM_OP_ERR";
    case WcStatus::retry_exceeded:
      return "IBV_WC_RETRY_EXC_ERR";
    case WcStatus::rnr_retry_exceeded:
      return "IBV_WC_RNR_RETRY_EXC_ERR";
    case WcStatus::fatal:
      return "IBV_WC_FATAL_ERR";
  }
  return "IBV_WC_UNKNOWN";
}

std::string_view wc_status_advice(WcStatus s) noexcept {
  switch (s) {
    case WcStatus::success:
      return "";
    case WcStatus::local_length_error:
      return "a work request is longer than its buffer or the receive; check lengths";
    case WcStatus::local_qp_error:
      return "the local queue pair failed (own link down, or a bad lkey); reconnect";
    case WcStatus::local_protection_error:
      return "a local buffer is not covered by the lkey it was posted with";
    case WcStatus::flushed:
      return "the connection failed earlier; this request was discarded; reconnect";
    case WcStatus::remote_access_error:
      return "the peer rejected the rkey or address range; re-exchange ring descriptors";
    case WcStatus::remote_invalid_request:
      return "the peer refused the request as invalid (an operation its QP does not allow, a "
             "message longer than its receive, or on Soft-RoCE a resent packet, see "
             "docs/transport.md); reconnect";
    case WcStatus::remote_operation_error:
      return "the peer could not complete the operation; check the peer's log";
    case WcStatus::retry_exceeded:
      return "the peer did not answer in time (gone or unreachable); check it and tune "
             "ack_timeout / retry_cnt";
    case WcStatus::rnr_retry_exceeded:
      return "the peer had no receive posted; post receives before the sender writes";
    case WcStatus::fatal:
      return "fatal device or transport error; check the kernel log and firmware";
  }
  return "";
}

}  // namespace rdmarepl::transport
