// The log text of a failed completion, named by the transport that failed.
#include <fmt/format.h>

#include "rdmarepl/transport/transport.h"

namespace rdmarepl::transport {

std::string failure_reason(const Connection& conn, WcStatus status) {
  Error why = conn.error();
  if (!why.message().empty()) return why.message();
  return fmt::format("{} ({})", to_string(status), wc_status_advice(status));
}

}  // namespace rdmarepl::transport
