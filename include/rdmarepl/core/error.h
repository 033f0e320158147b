// Error values for control-plane calls: a std::error_code of our category plus a message
// that tells the user what to do about it.
#pragma once

#include <string>
#include <string_view>
#include <system_error>

namespace rdmarepl {

// Error conditions raised by rdmarepl. Values are stable; never renumber.
enum class Errc : int {
  ok = 0,
  invalid_argument = 1,  // a caller-supplied value is out of range or inconsistent
  misaligned = 2,        // an address or length violates an alignment rule
  not_mapped = 3,        // an address range is not mapped in this process
  too_large = 4,         // a size exceeds a device or format limit
  out_of_memory = 5,     // a pool, ring or the system ran out of memory
  no_device = 6,         // no RDMA device (or not the one named) is available
  unsupported = 7,       // the platform or peer lacks a needed feature
  io_error = 8,          // a system call or device operation failed
  timeout = 9,           // an operation did not complete in time
  connection_refused = 10,
  connection_closed = 11,  // the peer went away
  auth_failed = 12,        // the peer failed pre-shared-key authentication
  protocol_error = 13,     // the peer sent bytes that violate the wire format
  remote_access = 14,      // a remote write named a bad key or address range
  corrupt = 15,            // stored or received data failed a checksum or bounds check
  not_found = 16,
  already_exists = 17,
  busy = 18,    // a resource is still in use
  closed = 19,  // the object was shut down
  not_leader =
      20,  // a write reached a node that does not lead its group (the message names who does)
};

const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(Errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

// A failed control-plane operation. `message` is written for the user: it says what went
// wrong, with the values involved, and what to do about it.
class Error {
 public:
  Error() = default;
  Error(Errc code, std::string message)
      : code_(make_error_code(code)), message_(std::move(message)) {}
  Error(std::error_code code, std::string message) : code_(code), message_(std::move(message)) {}

  [[nodiscard]] std::error_code code() const noexcept { return code_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }
  // "message (category: code text)", suitable for logs and exceptions.
  [[nodiscard]] std::string to_string() const;

  // True when this error has condition `e` (works across categories for the errno mapping).
  [[nodiscard]] bool is(Errc e) const noexcept { return code_ == make_error_code(e); }

 private:
  std::error_code code_;
  std::string message_;
};

// Builds an Error from an errno value, appending what to do for the errno values the
// RDMA stack commonly returns (ENOMEM, EIO, ETIMEDOUT, EINVAL ...).
Error errno_error(int err, std::string_view what);

// The errno's symbolic name and text, e.g. "ECONNRESET: Connection reset by peer".
std::string errno_text(int err);

// The remediation advice that errno_error appends for `err`, or "" when there is none.
std::string_view errno_advice(int err) noexcept;

}  // namespace rdmarepl

template <>
struct std::is_error_code_enum<rdmarepl::Errc> : std::true_type {};
