// Parts of the verbs transport that need no device: run on any host (label unit).
#include <catch2/catch.hpp>

#include "transport/verbs/async_events.h"
#include "transport/verbs/device.h"
#include "transport/verbs/qp.h"
#include "transport/verbs/verbs_transport.h"

namespace rdmarepl::transport::verbs {

TEST_CASE("QpEndpoint round-trips in network byte order", "[verbs][unit]") {
  QpEndpoint e;
  e.qpn = 0x123456;
  e.psn = 0xabcdef;
  e.lid = 0x1234;
  e.mtu = IBV_MTU_4096;
  e.link_layer = IBV_LINK_LAYER_INFINIBAND;
  for (int i = 0; i < 16; ++i) e.gid.raw[i] = static_cast<uint8_t>(i * 3);
  auto bytes = e.serialize();
  REQUIRE(bytes.size() == QpEndpoint::kWireSize);
  CHECK(bytes[4] == 0x00);
  CHECK(bytes[5] == 0x12);
  CHECK(bytes[7] == 0x56);
  auto back = QpEndpoint::parse(bytes);
  REQUIRE(back);
  CHECK(back->qpn == e.qpn);
  CHECK(back->psn == e.psn);
  CHECK(back->lid == e.lid);
  CHECK(back->mtu == e.mtu);
  CHECK(back->link_layer == e.link_layer);
  CHECK(std::equal(std::begin(e.gid.raw), std::end(e.gid.raw), std::begin(back->gid.raw)));
}

TEST_CASE("QpEndpoint rejects malformed blobs", "[verbs][unit]") {
  QpEndpoint e;
  e.qpn = 5;
  auto bytes = e.serialize();
  CHECK(QpEndpoint::parse(std::span(bytes).first(10)).error().is(Errc::protocol_error));
  auto v = bytes;
  v[0] = 9;
  CHECK(QpEndpoint::parse(v).error().is(Errc::unsupported));
  auto m = bytes;
  m[2] = 7;
  CHECK(QpEndpoint::parse(m).error().is(Errc::protocol_error));
  auto q = bytes;
  q[4] = 0x01;  // QPN > 24 bits
  CHECK(QpEndpoint::parse(q).error().is(Errc::protocol_error));
  auto z = bytes;
  z[7] = 0;  // QPN 0
  CHECK(QpEndpoint::parse(z).error().is(Errc::protocol_error));
}

TEST_CASE("path MTU is the smaller active MTU", "[verbs][unit]") {
  CHECK(path_mtu(IBV_MTU_4096, IBV_MTU_1024) == IBV_MTU_1024);
  CHECK(path_mtu(IBV_MTU_1024, IBV_MTU_2048) == IBV_MTU_1024);
  CHECK(path_mtu(IBV_MTU_4096, IBV_MTU_4096) == IBV_MTU_4096);
  CHECK(std::string(to_string(IBV_MTU_2048)) == "2048");
}

TEST_CASE("every ibv_wc_status maps to a named WcStatus", "[verbs][unit]") {
  CHECK(to_wc_status(IBV_WC_SUCCESS) == WcStatus::success);
  CHECK(to_wc_status(IBV_WC_REM_ACCESS_ERR) == WcStatus::remote_access_error);
  CHECK(to_wc_status(IBV_WC_WR_FLUSH_ERR) == WcStatus::flushed);
  CHECK(to_wc_status(IBV_WC_RETRY_EXC_ERR) == WcStatus::retry_exceeded);
  CHECK(to_wc_status(IBV_WC_RNR_RETRY_EXC_ERR) == WcStatus::rnr_retry_exceeded);
  CHECK(to_wc_status(IBV_WC_LOC_QP_OP_ERR) == WcStatus::local_qp_error);
  CHECK(to_wc_status(IBV_WC_LOC_PROT_ERR) == WcStatus::local_protection_error);
  CHECK(to_wc_status(IBV_WC_LOC_LEN_ERR) == WcStatus::local_length_error);
  CHECK(to_wc_status(IBV_WC_REM_INV_REQ_ERR) == WcStatus::remote_invalid_request);
  CHECK(to_wc_status(IBV_WC_REM_OP_ERR) == WcStatus::remote_operation_error);
  for (int s = IBV_WC_SUCCESS; s <= IBV_WC_TM_RNDV_INCOMPLETE; ++s) {
    auto w = to_wc_status(static_cast<ibv_wc_status>(s));
    CHECK_THAT(std::string(to_string(w)), Catch::StartsWith("IBV_WC_"));
    if (s != IBV_WC_SUCCESS) CHECK(w != WcStatus::success);
  }
  CHECK(to_wc_status(static_cast<ibv_wc_status>(999)) == WcStatus::fatal);
}

TEST_CASE("QP states, MTUs and port states have names", "[verbs][unit]") {
  CHECK(std::string(to_string(IBV_QPS_RESET)) == "RESET");
  CHECK(std::string(to_string(IBV_QPS_INIT)) == "INIT");
  CHECK(std::string(to_string(IBV_QPS_RTR)) == "RTR");
  CHECK(std::string(to_string(IBV_QPS_RTS)) == "RTS");
  CHECK(std::string(to_string(IBV_QPS_SQD)) == "SQD");
  CHECK(std::string(to_string(IBV_QPS_SQE)) == "SQE");
  CHECK(std::string(to_string(IBV_QPS_ERR)) == "ERR");
  CHECK_FALSE(std::string(to_string(static_cast<ibv_qp_state>(99))).empty());
  CHECK(std::string(to_string(IBV_MTU_256)) == "256");
  CHECK(std::string(to_string(IBV_MTU_512)) == "512");
  CHECK(std::string(to_string(IBV_MTU_1024)) == "1024");
  CHECK(std::string(to_string(IBV_MTU_4096)) == "4096");
  CHECK(std::string(to_string(static_cast<ibv_mtu>(9))) == "invalid");
  CHECK_THAT(std::string(to_string(IBV_PORT_ACTIVE)), Catch::Contains("active"));
  CHECK_THAT(std::string(to_string(IBV_PORT_DOWN)), Catch::Contains("down"));
}

TEST_CASE("access flags: remote write implies local write", "[verbs][unit]") {
  CHECK(to_ibv_access(Access::local_write) == IBV_ACCESS_LOCAL_WRITE);
  CHECK(to_ibv_access(Access::remote_write) == (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE));
  CHECK((to_ibv_access(Access::remote_read) & IBV_ACCESS_REMOTE_WRITE) == 0);
}

TEST_CASE("without RDMA, probe and open explain what was looked for", "[verbs][unit]") {
  auto report = probe();
  if (report.usable) {
    WARN("an RDMA device (" << report.device
                            << ") is present; the no-device path is "
                               "covered in environments without one");
    return;
  }
  CHECK_FALSE(report.reason.empty());
  CHECK_THAT(report.reason, Catch::Contains("any RDMA device with an active port"));
  auto named = Device::open(DeviceOptions{"mlx5_0", 0, -1});
  REQUIRE_FALSE(named.ok());
  CHECK(named.error().is(Errc::no_device));
  CHECK_THAT(named.error().message(), Catch::Contains("'mlx5_0'"));
  CHECK_THAT(named.error().message(), Catch::Contains("TCP"));
  auto t = VerbsTransport::create();
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().is(Errc::no_device));
}

}  // namespace rdmarepl::transport::verbs

namespace rdmarepl::transport::verbs {

TEST_CASE("async events have their verbs names and fatal QP events are told apart",
          "[verbs][unit]") {
  CHECK(std::string(to_string(IBV_EVENT_PORT_ERR)) == "IBV_EVENT_PORT_ERR");
  CHECK(std::string(to_string(IBV_EVENT_QP_FATAL)) == "IBV_EVENT_QP_FATAL");
  CHECK(std::string(to_string(IBV_EVENT_WQ_FATAL)) == "IBV_EVENT_WQ_FATAL");
  CHECK(std::string(to_string(static_cast<ibv_event_type>(999))) == "IBV_EVENT_(unknown)");
  CHECK(is_fatal_qp_event(IBV_EVENT_QP_FATAL));
  CHECK(is_fatal_qp_event(IBV_EVENT_QP_REQ_ERR));
  CHECK(is_fatal_qp_event(IBV_EVENT_QP_ACCESS_ERR));
  CHECK_FALSE(is_fatal_qp_event(IBV_EVENT_COMM_EST));
  CHECK_FALSE(is_fatal_qp_event(IBV_EVENT_PORT_ERR));
  CHECK_FALSE(is_fatal_qp_event(IBV_EVENT_SQ_DRAINED));
}

}  // namespace rdmarepl::transport::verbs
