// Who may reach a follower: a follower listening beyond loopback without a pre-shared key
// lets any host that reaches its port act as its leader (docs/replication.md, "Who may
// connect"). validate() refuses that unless ChannelOptions::allow_unauthenticated is set;
// the follower warns when it runs so.
#pragma once

#include <string_view>

namespace rdmarepl::replication::detail {

// 127.0.0.0/8, ::1 and "localhost": only processes of this host can connect.
constexpr bool is_loopback_host(std::string_view host) noexcept {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.starts_with("127.");
}

// Whether a follower with these settings accepts leaders nobody authenticated from beyond
// this host.
constexpr bool open_to_network(std::string_view listen_host, std::string_view key) noexcept {
  return key.empty() && !is_loopback_host(listen_host);
}

}  // namespace rdmarepl::replication::detail
