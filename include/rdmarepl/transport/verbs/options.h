// Options of the verbs transport.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rdmarepl/transport/verbs/device.h"
#include "rdmarepl/transport/verbs/qp.h"

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
  uint32_t max_inline_data = 128;
  uint32_t unsignaled_batch = kDefaultUnsignaledBatch;
  // Pre-post recv_queue_depth zero-length receives at connect time and re-post them from
  // poll() in batches of recv_replenish_batch, instead of the caller's post_recvs().
  bool auto_recv = false;
  uint32_t recv_replenish_batch = 32;
  // All connections of the transport share one shared receive queue of srq_depth entries.
  bool use_srq = false;
  uint32_t srq_depth = 4096;
  // Registrations larger than this are split into several MRs; 0: the device's max_mr_size.
  size_t max_mr_bytes = 0;
};

}  // namespace rdmarepl::transport::verbs
