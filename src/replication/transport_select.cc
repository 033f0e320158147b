#include "transport_select.h"

#include <fmt/format.h>

#include "rdmarepl/core/log.h"
#include "rdmarepl/features.h"
#include "rdmarepl/transport/tcp/tcp_transport.h"

#if RDMAREPL_HAVE_VERBS
#include "transport/verbs/device.h"
#if __has_include("transport/verbs/verbs_transport.h")
#include "transport/verbs/verbs_transport.h"
#define RDMAREPL_REPLICATION_VERBS_TRANSPORT 1
#endif
#endif

namespace rdmarepl::replication {
namespace {

// Opens the verbs transport, or says why it cannot be used here.
Result<std::unique_ptr<transport::Transport>> open_verbs(bool rdma_cm) {
#if RDMAREPL_HAVE_VERBS
  const auto report = transport::verbs::probe();
  if (!report.usable)
    return Error(Errc::no_device, fmt::format("no usable RDMA device: {}", report.reason));
#ifdef RDMAREPL_REPLICATION_VERBS_TRANSPORT
  transport::verbs::VerbsOptions vo;
  vo.use_rdma_cm = rdma_cm;
  auto t = transport::verbs::VerbsTransport::create(vo);
  if (!t.ok()) return std::move(t).error();
  return std::unique_ptr<transport::Transport>(std::move(t).value());
#else
  (void)rdma_cm;
  return Error(Errc::unsupported, fmt::format("RDMA device {} is usable but this build has no "
                                              "verbs transport",
                                              report.device));
#endif
#else
  (void)rdma_cm;
  return Error(Errc::unsupported,
               "this build of rdmarepl has no verbs support (built with RDMAREPL_WITH_VERBS=OFF "
               "or without libibverbs-dev / librdmacm-dev)");
#endif
}

}  // namespace

Result<std::unique_ptr<transport::Transport>> select_transport(TransportKind kind, bool rdma_cm) {
  switch (kind) {
    case TransportKind::tcp:
      return std::unique_ptr<transport::Transport>(
          std::make_unique<transport::tcp::TcpTransport>());
    case TransportKind::verbs: {
      auto t = open_verbs(rdma_cm);
      if (!t.ok())
        return Error(t.error().code(),
                     fmt::format("transport=verbs was requested: {}. Use transport=tcp (or auto, "
                                 "which falls back to TCP), or run where an active RDMA device "
                                 "exists (docs/soft-roce-harness.md shows Soft-RoCE)",
                                 t.error().message()));
      return t;
    }
    case TransportKind::automatic: {
      auto t = open_verbs(rdma_cm);
      if (t.ok()) {
        log::info("rdmarepl: transport=auto picked verbs{}", rdma_cm ? " (RDMA CM set-up)" : "");
        return t;
      }
      log::info("rdmarepl: transport=auto uses TCP{} because verbs is not usable: {}",
                rdma_cm ? " (rdma_cm does not apply to it)" : "", t.error().message());
      return std::unique_ptr<transport::Transport>(
          std::make_unique<transport::tcp::TcpTransport>());
    }
  }
  return Error(Errc::invalid_argument, "unknown TransportKind");
}

}  // namespace rdmarepl::replication
