#include "rdmarepl/core/error.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace rdmarepl {
namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "rdmarepl"; }
  std::string message(int ev) const override {
    switch (static_cast<Errc>(ev)) {
      case Errc::ok:
        return "success";
      case Errc::invalid_argument:
        return "invalid argument";
      case Errc::misaligned:
        return "misaligned address or length";
      case Errc::not_mapped:
        return "address range not mapped";
      case Errc::too_large:
        return "size exceeds a limit";
      case Errc::out_of_memory:
        return "out of memory";
      case Errc::no_device:
        return "no RDMA device";
      case Errc::unsupported:
        return "unsupported";
      case Errc::io_error:
        return "I/O error";
      case Errc::timeout:
        return "timed out";
      case Errc::connection_refused:
        return "connection refused";
      case Errc::connection_closed:
        return "connection closed";
      case Errc::auth_failed:
        return "authentication failed";
      case Errc::protocol_error:
        return "protocol error";
      case Errc::remote_access:
        return "remote access error";
      case Errc::corrupt:
        return "data corrupt";
      case Errc::not_found:
        return "not found";
      case Errc::already_exists:
        return "already exists";
      case Errc::busy:
        return "resource busy";
      case Errc::closed:
        return "closed";
      case Errc::not_leader:
        return "not the leader";
    }
    return "unknown rdmarepl error";
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const Category category;
  return category;
}

std::string Error::to_string() const {
  return fmt::format("{} ({}: {})", message_, code_.category().name(), code_.message());
}

std::string_view errno_advice(int err) noexcept {
  switch (err) {
    case ENOMEM:
      return "raise the registration (MR) cache / pre-registered pool size, or the locked-memory "
             "limit (ulimit -l)";
    case EIO:
      return "the HCA reported an error: check the adapter's firmware and kernel log (dmesg)";
    case ETIMEDOUT:
      return "the queue pair timed out: check that the peer is alive and tune ack_timeout / "
             "retry_cnt";
    case EINVAL:
      return "check 4 KiB alignment of addresses and lengths, the overcommit setting, and "
             "consider huge pages";
    case ENOSYS:
      return "this kernel has no RDMA support; use the TCP transport";
    case ENODEV:
      return "no RDMA device is present; use the TCP transport or load a driver (e.g. rdma_rxe)";
    case EPERM:
    case EACCES:
      return "permission denied: run with CAP_IPC_LOCK or raise the memlock limit";
    case ECONNREFUSED:
      return "nothing is listening at that address: start the peer first or check host and port";
    case EADDRINUSE:
      return "the port is taken: choose another port or stop the process holding it";
    default:
      return {};
  }
}

std::string errno_text(int err) {
  const char* name = ::strerrorname_np(err);
  if (name == nullptr) return fmt::format("errno {}: {}", err, std::strerror(err));
  return fmt::format("{}: {}", name, std::strerror(err));
}

Error errno_error(int err, std::string_view what) {
  std::error_code code(err, std::generic_category());
  auto advice = errno_advice(err);
  if (advice.empty()) return Error(code, fmt::format("{}: {}", what, std::strerror(err)));
  return Error(code, fmt::format("{}: {}; {}", what, std::strerror(err), advice));
}

}  // namespace rdmarepl
