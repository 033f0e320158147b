#include "transport/qp_manager.h"

#include <algorithm>

#include "rdmarepl/core/log.h"

namespace rdmarepl::transport {

Result<std::unique_ptr<Connection>> QpManager::acquire(uint32_t slot, bool* reused) {
  std::unique_ptr<Connection> conn;
  bool pooled = false;
  const auto it =
      std::find_if(idle_.begin(), idle_.end(), [&](const Pooled& p) { return p.slot == slot; });
  if (it != idle_.end()) {
    conn = std::move(it->conn);
    idle_.erase(it);
    if (conn->healthy()) {
      pooled = true;
    } else {
      conn->close();
      conn.reset();
    }
  }
  if (!conn) {
    auto made = factory_(slot);
    if (!made) return made.error();
    conn = std::move(made).value();
    ++made_;
  }
  if (Status st = fit(*conn); !st.ok()) {
    // A fresh connection keeps its creation size, which holds everything it can have
    // outstanding: usable, only not sized to the budget.
    log::warn("QP manager: {}; the connection keeps its current completion queue size",
              st.error().message());
  }
  if (reused != nullptr) *reused = pooled;
  if (pooled) {
    ++reused_;
    if (options_.reused_counter != nullptr)
      options_.reused_counter->fetch_add(1, std::memory_order_relaxed);
  }
  return conn;
}

void QpManager::release(std::unique_ptr<Connection> conn, uint32_t slot) {
  if (!conn) return;
  if (!conn->healthy() || idle_.size() >= options_.max_idle) {
    conn->close();
    return;
  }
  if (options_.cq_budget != 0) {
    if (Status st = resize(*conn, 0); !st.ok()) {
      log::warn("QP manager: {}; closing the connection instead of pooling it",
                st.error().message());
      conn->close();
      return;
    }
  }
  // One per slot: a slot released twice keeps the newer connection.
  std::erase_if(idle_, [&](Pooled& p) {
    if (p.slot != slot) return false;
    p.conn->close();
    return true;
  });
  idle_.push_back(Pooled{slot, std::move(conn)});
}

bool QpManager::set_active(uint32_t n) noexcept {
  active_ = n;
  const uint32_t entries = options_.cq_budget == 0 ? 0 : options_.cq_budget / std::max(1u, n);
  if (entries == cq_entries_) return false;
  cq_entries_ = entries;
  log::debug("QP manager: {} active connection(s), {} completion entries each", n, entries);
  return true;
}

Status QpManager::fit(Connection& conn) {
  if (cq_entries_ == 0) return ok_status();
  return resize(conn, cq_entries_);
}

Status QpManager::resize(Connection& conn, uint32_t entries) {
  auto changed = conn.resize_completions(entries);
  if (!changed) return changed.error();
  if (*changed) {
    ++resizes_;
    if (options_.resize_counter != nullptr)
      options_.resize_counter->fetch_add(1, std::memory_order_relaxed);
  }
  return ok_status();
}

void QpManager::clear() noexcept {
  for (auto& p : idle_) p.conn->close();
  idle_.clear();
}

}  // namespace rdmarepl::transport
