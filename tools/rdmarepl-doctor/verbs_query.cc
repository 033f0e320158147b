// The device limits and port MTUs only libibverbs can tell, and a test queue pair that asks
// for the inline size the verbs transport uses.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "rdma_facts.h"
#include "rdmarepl/features.h"

#if RDMAREPL_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

namespace rdmarepl::doctor {

#if RDMAREPL_HAVE_VERBS
namespace {

uint32_t mtu_bytes(ibv_mtu m) noexcept {
  return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << static_cast<int>(m) : 0;
}

// Creates an RC QP that asks for `want` inline bytes; returns what it was granted.
void probe_inline(ibv_context* ctx, DeviceFacts& d, uint32_t want) {
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = pd ? ibv_create_cq(ctx, 4, nullptr, nullptr, 0) : nullptr;
  ibv_qp* qp = nullptr;
  if (cq != nullptr) {
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = a.cap.max_recv_wr = 1;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = want;
    qp = ibv_create_qp(pd, &a);
    if (qp != nullptr) d.max_inline_data = a.cap.max_inline_data;
  }
  if (qp == nullptr)
    d.inline_error = fmt::format("creating an RC queue pair with {} inline bytes failed: {}", want,
                                 std::strerror(errno));
  if (qp) ibv_destroy_qp(qp);
  if (cq) ibv_destroy_cq(cq);
  if (pd) ibv_dealloc_pd(pd);
}

void query_one(ibv_device* dev, DeviceFacts& d, uint32_t want_inline) {
  ibv_context* ctx = ibv_open_device(dev);
  if (ctx == nullptr) {
    d.verbs_error = fmt::format("ibv_open_device({}) failed: {}", d.name, std::strerror(errno));
    return;
  }
  ibv_device_attr attr{};
  if (int rc = ibv_query_device(ctx, &attr); rc != 0) {
    d.verbs_error = fmt::format("ibv_query_device({}) failed: {}", d.name, std::strerror(rc));
  } else {
    d.queried = true;
    d.iwarp = dev->transport_type == IBV_TRANSPORT_IWARP;
    d.max_mr_size = attr.max_mr_size;
    d.max_qp = static_cast<uint32_t>(attr.max_qp);
    d.max_qp_wr = static_cast<uint32_t>(attr.max_qp_wr);
    d.max_qp_rd_atom = static_cast<uint32_t>(attr.max_qp_rd_atom);
    for (auto& p : d.ports) {
      ibv_port_attr pa{};
      if (ibv_query_port(ctx, static_cast<uint8_t>(p.port), &pa) == 0)
        p.active_mtu = mtu_bytes(pa.active_mtu);
    }
    probe_inline(ctx, d, want_inline);
  }
  ibv_close_device(ctx);
}

}  // namespace

void query_verbs(std::vector<DeviceFacts>& devices, uint32_t want_inline) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) {
    for (auto& d : devices)
      d.verbs_error = fmt::format("ibv_get_device_list failed: {}", std::strerror(errno));
    return;
  }
  for (auto& d : devices) {
    d.verbs_error = fmt::format(
        "libibverbs does not list {} (is its user-space provider, e.g. "
        "rdma-core's librxe/libmlx5, installed?)",
        d.name);
    for (int i = 0; i < n; ++i)
      if (d.name == ibv_get_device_name(list[i])) {
        d.verbs_error.clear();
        query_one(list[i], d, want_inline);
      }
  }
  ibv_free_device_list(list);
}

#else

void query_verbs(std::vector<DeviceFacts>& devices, uint32_t) {
  for (auto& d : devices)
    d.verbs_error = "this build of rdmarepl has no verbs transport (libibverbs-dev was missing)";
}

#endif

}  // namespace rdmarepl::doctor
