#include "rdmarepl/replication/transport_select.h"

#include "rdmarepl/core/log.h"
#include "rdmarepl/features.h"

namespace rdmarepl::replication {

Result<std::unique_ptr<transport::Transport>> select_transport(TransportKind kind) {
  if (kind == TransportKind::verbs) {
#if RDMAREPL_HAVE_VERBS
    return Error(Errc::no_device,
                 "transport=verbs was requested but the verbs transport is not available in this "
                 "build yet; use transport=tcp or transport=auto");
#else
    return Error(Errc::unsupported,
                 "transport=verbs was requested but this build of rdmarepl has no verbs support "
                 "(RDMAREPL_WITH_VERBS=OFF or libibverbs-dev/librdmacm-dev missing at build time); "
                 "rebuild with them or use transport=tcp");
#endif
  }
  return Error(Errc::unsupported, "the TCP transport is not available in this build yet");
}

}  // namespace rdmarepl::replication
