#include "transport/verbs/handles.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#include "rdmarepl/core/log.h"

namespace rdmarepl::transport::verbs {
namespace {

std::atomic<unsigned long> g_destroy_failures{0};

// The ibv_destroy_* / ibv_dealloc_* / ibv_dereg_mr calls return an errno value (0 on
// success). A failure here means a resource is still in use (EBUSY: e.g. a CQ with a QP still
// attached) and the object leaks; it is a bug in tear-down order, reported loudly.
void report(int rc, const char* what, const void* p) noexcept {
  if (rc == 0) return;
  g_destroy_failures.fetch_add(1, std::memory_order_relaxed);
  try {
    log::error(
        "verbs: {}({}) failed: {} (errno {}); the resource leaks. EBUSY means something "
        "still uses it: destroy QPs before CQs/SRQs and MRs before the PD",
        what, p, std::strerror(rc), rc);
  } catch (...) {  // logging must not throw out of a destructor
  }
}

}  // namespace

unsigned long destroy_failures() noexcept {
  return g_destroy_failures.load(std::memory_order_relaxed);
}

void ContextDeleter::operator()(ibv_context* p) const noexcept {
  report(ibv_close_device(p), "ibv_close_device", p);
}
void PdDeleter::operator()(ibv_pd* p) const noexcept {
  report(ibv_dealloc_pd(p), "ibv_dealloc_pd", p);
}
void CompChannelDeleter::operator()(ibv_comp_channel* p) const noexcept {
  report(ibv_destroy_comp_channel(p), "ibv_destroy_comp_channel", p);
}
void CqDeleter::operator()(ibv_cq* p) const noexcept {
  report(ibv_destroy_cq(p), "ibv_destroy_cq", p);
}
void SrqDeleter::operator()(ibv_srq* p) const noexcept {
  report(ibv_destroy_srq(p), "ibv_destroy_srq", p);
}
void QpDeleter::operator()(ibv_qp* p) const noexcept {
  report(ibv_destroy_qp(p), "ibv_destroy_qp", p);
}
void MrDeleter::operator()(ibv_mr* p) const noexcept {
  report(ibv_dereg_mr(p), "ibv_dereg_mr", p);
}
void CmChannelDeleter::operator()(rdma_event_channel* p) const noexcept {
  rdma_destroy_event_channel(p);
}
void CmIdDeleter::operator()(rdma_cm_id* p) const noexcept {
  // rdma_destroy_id returns -1 with errno set.
  if (rdma_destroy_id(p) != 0) report(errno, "rdma_destroy_id", p);
}

}  // namespace rdmarepl::transport::verbs
