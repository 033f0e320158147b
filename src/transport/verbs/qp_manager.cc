#include "transport/verbs/qp_manager.h"

#include <fmt/format.h>

#include <algorithm>

#include "rdmarepl/core/log.h"
#include "transport/verbs/connection.h"

namespace rdmarepl::transport::verbs {

Result<Connection*> QpManager::shard(size_t index) {
  if (index >= active_.size()) {
    return Error(Errc::invalid_argument,
                 fmt::format("QP manager: shard {} requested but only {} are active; call "
                             "set_shard_count first",
                             index, active_.size()));
  }
  auto& slot = active_[index];
  if (slot && slot->healthy()) return slot.get();
  slot.reset();
  while (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    if (c->healthy()) {
      slot = std::move(c);
      break;
    }
  }
  if (!slot) {
    auto made = factory_(index);
    if (!made) return made.error();
    slot = std::move(*made);
    ++made_;
  }
  if (cq_entries_ != 0) {
    if (auto* v = dynamic_cast<VerbsConnection*>(slot.get()))
      RDMAREPL_TRY(v->resize_cqs(cq_entries_));
  }
  return slot.get();
}

Status QpManager::set_shard_count(size_t n) {
  while (active_.size() > n) {
    auto c = std::move(active_.back());
    active_.pop_back();
    if (c && c->healthy()) idle_.push_back(std::move(c));
  }
  while (idle_.size() > options_.max_idle) {
    idle_.front()->close();
    idle_.erase(idle_.begin());
  }
  active_.resize(n);
  return resize_cqs();
}

size_t QpManager::connected() const noexcept {
  return static_cast<size_t>(
      std::count_if(active_.begin(), active_.end(), [](const auto& c) { return c != nullptr; }));
}

Status QpManager::resize_cqs() {
  if (options_.cq_budget == 0 || active_.empty()) return {};
  const auto per_shard = static_cast<uint32_t>(options_.cq_budget / active_.size());
  cq_entries_ = per_shard;
  for (auto& c : active_) {
    auto* v = dynamic_cast<VerbsConnection*>(c.get());
    if (v == nullptr) continue;
    // Never below what the connection can have outstanding.
    const uint32_t floor = std::max(v->send_queue_depth(), v->recv_queue_depth());
    RDMAREPL_TRY(v->resize_cqs(std::max(per_shard, floor)));
  }
  log::debug("QP manager: {} active shards, {} CQ entries each", active_.size(), per_shard);
  return {};
}

}  // namespace rdmarepl::transport::verbs
