#include "rdmarepl/replication/detail/channel_core.h"

#include "follower.h"
#include "leader.h"
#include "transport_select.h"

namespace rdmarepl::replication {

Result<std::unique_ptr<ChannelCore>> ChannelCore::create(
    const ChannelOptions& options, std::unique_ptr<transport::Transport> transport,
    const StoreHooks& store) {
  RDMAREPL_TRY(validate(options));
  if (!transport) {
    auto t = select_transport(options.transport, options.rdma_cm);
    if (!t.ok()) return std::move(t).error();
    transport = std::move(t).value();
  }
  if (options.role == Role::leader) {
    auto core = detail::Leader::create(options, std::move(transport), store);
    if (core.ok() && options.tuning.enabled) {
      auto& base = static_cast<detail::CoreBase&>(**core);
      if (Status st = base.start_tuner(); !st.ok()) {
        base.close();
        return std::move(st).error();
      }
    }
    return core;
  }
  return detail::Follower::create(options, std::move(transport), store);
}

}  // namespace rdmarepl::replication
