#include "transport/qp_manager.h"

#include <algorithm>

#include "rdmarepl/core/log.h"

namespace rdmarepl::transport {

Result<std::unique_ptr<Connection>> QpManager::acquire(uint32_t slot) {
  std::unique_ptr<Connection> conn;
  bool pooled = false;
  while (!idle_.empty() && !conn) {
    conn = std::move(idle_.back());
    idle_.pop_back();
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
  if (pooled) {
    ++reused_;
    if (options_.reused_counter != nullptr)
      options_.reused_counter->fetch_add(1, std::memory_order_relaxed);
  }
  return conn;
}

void QpManager::release(std::unique_ptr<Connection> conn) {
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
  idle_.push_back(std::move(conn));
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
  for (auto& c : idle_) c->close();
  idle_.clear();
}

}  // namespace rdmarepl::transport
