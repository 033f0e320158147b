// Which transport a connection runs on: chosen in ChannelOptions::transport and carried in
// the bootstrap Hello (docs/wire_format.md, "Bootstrap handshake"), where both sides must
// agree. The values of tcp and verbs are on the wire: never renumber.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace rdmarepl::transport {

enum class TransportKind : uint8_t {
  automatic = 0,  // a choice, never on the wire: verbs when the build has it and an active
                  // RDMA device exists, else tcp
  tcp = 1,
  verbs = 2,
};

constexpr std::string_view to_string(TransportKind k) noexcept {
  switch (k) {
    case TransportKind::automatic:
      return "auto";
    case TransportKind::tcp:
      return "tcp";
    case TransportKind::verbs:
      return "verbs";
  }
  return "?";
}

inline std::span<const TransportKind> enum_values(TransportKind) noexcept {
  static constexpr TransportKind kAll[] = {TransportKind::automatic, TransportKind::tcp,
                                           TransportKind::verbs};
  return kAll;
}

}  // namespace rdmarepl::transport
