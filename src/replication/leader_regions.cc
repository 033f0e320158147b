// Gathered writes (leader_gathered.h): values in the store's own registered regions
// (register_region()). A plain replicate() whose value lies wholly inside one is sent by
// gather from where it lies, as a zero-copy Buffer is (Leader::write_gathered()); the window
// holds a Pin on the region's registration until the batch is evicted. See
// docs/replication.md, "Values in the store's own regions".
#include <fmt/format.h>

#include <thread>

#include "leader_gathered.h"

namespace rdmarepl::replication::detail {

Status GatheredWrites::register_region(const void* addr, size_t length) {
  if (closed_.load(std::memory_order_acquire))
    return Error(Errc::closed, "register_region: the replication channel is closed");
  return regions_->declare(addr, length);
}

Status GatheredWrites::unregister_region(const void* addr, std::chrono::milliseconds timeout) {
  const Deadline deadline = Deadline::after(timeout);
  for (;;) {
    Status st = regions_->retire(addr);
    if (st.ok() || !st.error().is(Errc::busy)) return st;
    if (deadline.expired())
      return Error(Errc::timeout,
                   fmt::format("{} after {} ms. A batch leaves the retained window once every "
                               "follower acknowledged it (and the log has it): wait_all_acked() "
                               "first, then call unregister_region() again; the region takes "
                               "no new values meanwhile",
                               st.error().message(), timeout.count()));
    // Evictions drop the references; with PollingMode::manual nobody else drives them.
    if (host_.progress() == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

size_t GatheredWrites::region_references(const void* addr) const {
  return regions_->references(addr);
}

bool GatheredWrites::write_from_region(std::string_view key, std::string_view value,
                                       WriteResult& r) noexcept {
  if (!regions_->any()) return false;
  auto found = regions_->find(value.data(), value.size());
  if (found.kind == StoreRegions::Lookup::Kind::miss) {
    ChannelMetrics::add(metrics_.region_cache_misses);  // copied; the control thread
    return false;                                       // registers the region again
  }
  if (found.kind != StoreRegions::Lookup::Kind::hit) return false;
  ChannelMetrics::add(metrics_.region_cache_hits);
  HeldValue held;
  held.pin = std::move(found.pin);
  r = host_.write_gathered(key, std::as_bytes(std::span(value.data(), value.size())), found.lkey,
                           std::move(held));
  if (r.status == WriteStatus::ok) ChannelMetrics::add(metrics_.region_values_gathered);
  return true;
}

}  // namespace rdmarepl::replication::detail
