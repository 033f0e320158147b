// One move-only owner per libibverbs / librdmacm resource. Each is a std::unique_ptr with a
// deleter that calls the matching destroy function and logs (never throws) when it fails, so
// a move-assignment releases the old resource first and nothing leaks on an early return.
// Destruction order is the caller's member order: declare the PD before the MRs and the CQs
// before the QPs, so that members are destroyed in reverse (QPs, CQs, MRs, PD, context).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>

namespace rdmarepl::transport::verbs {

struct ContextDeleter {
  void operator()(ibv_context* p) const noexcept;
};
struct PdDeleter {
  void operator()(ibv_pd* p) const noexcept;
};
struct CompChannelDeleter {
  void operator()(ibv_comp_channel* p) const noexcept;
};
struct CqDeleter {
  void operator()(ibv_cq* p) const noexcept;
};
struct SrqDeleter {
  void operator()(ibv_srq* p) const noexcept;
};
struct QpDeleter {
  void operator()(ibv_qp* p) const noexcept;
};
struct MrDeleter {
  void operator()(ibv_mr* p) const noexcept;
};
struct CmChannelDeleter {
  void operator()(rdma_event_channel* p) const noexcept;
};
struct CmIdDeleter {
  void operator()(rdma_cm_id* p) const noexcept;
};

using ContextHandle = std::unique_ptr<ibv_context, ContextDeleter>;
using PdHandle = std::unique_ptr<ibv_pd, PdDeleter>;
using CompChannelHandle = std::unique_ptr<ibv_comp_channel, CompChannelDeleter>;
using CqHandle = std::unique_ptr<ibv_cq, CqDeleter>;
using SrqHandle = std::unique_ptr<ibv_srq, SrqDeleter>;
using QpHandle = std::unique_ptr<ibv_qp, QpDeleter>;
using MrHandle = std::unique_ptr<ibv_mr, MrDeleter>;
using CmChannelHandle = std::unique_ptr<rdma_event_channel, CmChannelDeleter>;
using CmIdHandle = std::unique_ptr<rdma_cm_id, CmIdDeleter>;

// How many destroy calls failed in this process (each one was logged). Tests use it to prove
// that tear-down released everything in a legal order.
unsigned long destroy_failures() noexcept;

}  // namespace rdmarepl::transport::verbs
