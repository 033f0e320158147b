#include "rdmarepl/replication/channel_core.h"

#include "follower.h"
#include "leader.h"
#include "rdmarepl/replication/transport_select.h"

namespace rdmarepl::replication {

Result<std::unique_ptr<ChannelCore>> ChannelCore::create(
    const ChannelOptions& options, std::unique_ptr<transport::Transport> transport,
    const StoreHooks& store) {
  RDMAREPL_TRY(validate(options));
  if (!transport) {
    auto t = select_transport(options.transport);
    if (!t.ok()) return std::move(t).error();
    transport = std::move(t).value();
  }
  if (options.role == Role::leader)
    return detail::Leader::create(options, std::move(transport), store);
  return detail::Follower::create(options, std::move(transport), store);
}

}  // namespace rdmarepl::replication
