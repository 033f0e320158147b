// Options of the verbs transport.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/verbs/device.h"
#include "transport/verbs/qp.h"

namespace rdmarepl::transport::verbs {

// Selective signaling: at least every kDefaultUnsignaledBatch-th write is signaled so the
// send queue drains; the queue must hold two such batches (one completing while the next is
// posted), or posting could stall with every slot owned by unsignaled requests.
inline constexpr uint32_t kDefaultUnsignaledBatch = 64;
inline constexpr uint32_t kDefaultSendQueueDepth = 1024;  // ConnectionOptions' default
static_assert(kDefaultSendQueueDepth >= 2 * kDefaultUnsignaledBatch,
              "the send queue must hold two unsignaled batches");

struct VerbsOptions {
  DeviceOptions device;
  QpTuning qp;
  // Writes up to this many bytes are sent inline (no DMA read of the source; the buffer may
  // be reused at once). The device may grant less; the connection uses what it grants.
  // Inline writes do not use the lkey, so a wrong lkey goes unnoticed for them.
  uint32_t max_inline_data = 64;
  // Lowered per connection to send_queue_depth / 2 when the queue is shallower.
  uint32_t unsignaled_batch = kDefaultUnsignaledBatch;
  // Pre-post recv_queue_depth zero-length receives at connect time and re-post them from
  // poll() in batches of recv_replenish_batch, instead of the caller's post_recvs().
  bool auto_recv = false;
  uint32_t recv_replenish_batch = 32;
  // All connections of the transport share one shared receive queue of srq_depth entries.
  bool use_srq = false;
  uint32_t srq_depth = 4096;
  // Set connections up with librdmacm (address and route resolution, CM connect/accept)
  // instead of a TCP socket. The endpoint must then be an address of the RDMA device's
  // interface. The CM private data names a small handshake landing buffer per side; the
  // bootstrap handshake (node id, regions, app_data, pre-shared key authentication) then
  // runs over the connected QP, so every ConnectionOptions field works as with TCP.
  bool use_rdma_cm = false;
  // Registrations larger than this are split into several MRs; 0: the device's max_mr_size.
  size_t max_mr_bytes = 0;
};

}  // namespace rdmarepl::transport::verbs
