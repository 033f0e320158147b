// One RC connection over libibverbs. Set-up (connection.cc) creates the completion channel,
// the send and receive CQs and the QP, runs the bootstrap handshake over a TCP socket
// (QPN, PSN, GID, LID, active MTU in the transport blob), moves the QP to RTS and
// synchronises with the peer so neither side writes before the other is ready to receive.
// The data path (connection_datapath.cc) posts chained write-with-immediate requests with
// selective signaling and reaps both CQs.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "rdmarepl/transport/transport.h"
#include "transport/bootstrap/handshake.h"
#include "transport/bootstrap/socket.h"
#include "transport/verbs/async_events.h"
#include "transport/verbs/device.h"
#include "transport/verbs/handles.h"
#include "transport/verbs/options.h"

namespace rdmarepl::transport::verbs {

class CmPipe;

// What a transport shares with its listeners and connections; it outlives all of them (each
// holds a shared_ptr), so the SRQ and PD are destroyed after every QP that uses them.
struct TransportState {
  std::shared_ptr<Device> device;
  VerbsOptions options;
  SrqHandle srq;  // null unless options.use_srq
  // Declared last: its reader thread stops before the device closes.
  AsyncEventMonitor async_events;
};

class VerbsConnection final : public Connection {
 public:
  // Creates the QP, runs the handshake as `role` on `socket` and brings the QP to RTS, all
  // by `deadline` (the connecting side: connect_timeout from connect(); the accepting side:
  // connect_timeout from the peer's arrival, as the listener admitted it).
  static Result<std::unique_ptr<VerbsConnection>> establish(std::shared_ptr<TransportState> state,
                                                            bootstrap::Fd socket,
                                                            bootstrap::Role role,
                                                            const ConnectionOptions& options,
                                                            Deadline deadline);

  // The same over RDMA CM (cm.cc): `id` has a resolved route (active side) or is the child id
  // of a CONNECT_REQUEST whose private data is `request` (passive side). The private data
  // carries each side's handshake landing buffer; the bootstrap handshake then runs over the
  // connected QP (cm_pipe.h), so node ids, regions, app_data and pre-shared keys work as
  // with the TCP bootstrap.
  static Result<std::unique_ptr<VerbsConnection>> establish_cm_active(
      std::shared_ptr<TransportState> state, CmChannelHandle channel, CmIdHandle id,
      const ConnectionOptions& options, Deadline deadline);
  // The passive side in two steps, so that the listener can hold the connection without a
  // thread until the peer's first handshake write arrives (cm_listener.cc). cm_accept():
  // the QP, the handshake pipe (returned in `pipe`) and the receives, RTR, the receive CQ
  // armed (the peer's first write raises an event on the recv_cq()'s channel), rdma_accept.
  // An error rejects the request.
  static Result<std::unique_ptr<VerbsConnection>> cm_accept(std::shared_ptr<TransportState> state,
                                                            CmChannelHandle channel, CmIdHandle id,
                                                            std::span<const uint8_t> request,
                                                            const ConnectionOptions& options,
                                                            std::unique_ptr<CmPipe>& pipe);
  // Then: waits for ESTABLISHED unless that event was `established` already (read by the
  // listener), RTS, and the handshake over `pipe` until `deadline`.
  Status cm_complete(CmPipe& pipe, bool established, const ConnectionOptions& options,
                     Deadline deadline);

  ~VerbsConnection() override;

  PostStatus post_writes(std::span<const WriteRequest> requests) noexcept override;
  PostStatus post_recvs(uint32_t count, uint64_t first_wr_id = 0) noexcept override;
  PostStatus post_sends(std::span<const SendRequest> requests) noexcept override;
  // Not with VerbsOptions::use_srq or auto_recv (PostStatus::invalid): those receive queues
  // hold zero-length receives the connection posts itself.
  PostStatus post_recv_buffers(std::span<const RecvBuffer> buffers) noexcept override;
  PostStatus post_reads(std::span<const ReadRequest> requests) noexcept override;
  size_t poll(std::span<Completion> out) noexcept override;
  Status wait(std::chrono::milliseconds timeout) override;
  int readiness(std::span<pollfd> out) noexcept override;
  void consume_readiness(std::span<const pollfd> fds) noexcept override;
  [[nodiscard]] bool healthy() const noexcept override {
    return !failed_.load(std::memory_order_acquire);
  }
  [[nodiscard]] Error error() const override;
  [[nodiscard]] const PeerInfo& peer() const noexcept override { return peer_; }
  void close() noexcept override;

  // For tests, tuning and the QP manager.
  [[nodiscard]] ibv_qp* qp() const noexcept { return qp_.get(); }
  [[nodiscard]] ibv_cq* send_cq() const noexcept { return send_cq_.get(); }
  [[nodiscard]] ibv_cq* recv_cq() const noexcept { return recv_cq_.get(); }
  [[nodiscard]] uint32_t max_inline_data() const noexcept { return max_inline_; }
  [[nodiscard]] ibv_mtu path_mtu() const noexcept { return path_mtu_; }
  [[nodiscard]] uint32_t send_queue_depth() const noexcept { return sq_depth_; }
  [[nodiscard]] uint32_t unsignaled_batch() const noexcept { return unsignaled_batch_; }
  [[nodiscard]] uint32_t outstanding_sends() const noexcept {
    return static_cast<uint32_t>(sq_tail_ - sq_head_);
  }
  [[nodiscard]] uint32_t recv_queue_depth() const noexcept { return rq_depth_; }
  [[nodiscard]] uint32_t posted_recvs() const noexcept { return rq_posted_; }
  // Resizes both CQs (ibv_resize_cq) to hold `entries` completions each, never below the
  // size each was created with (its queue's depth: what it can have outstanding) nor above
  // the device's max_cqe.
  Result<bool> resize_completions(uint32_t entries) override;
  [[nodiscard]] uint32_t completion_entries() const noexcept override {
    return std::max(send_cq_entries_, recv_cq_entries_);
  }

 private:
  explicit VerbsConnection(std::shared_ptr<TransportState> state) : state_(std::move(state)) {}
  Status create_resources(const ConnectionOptions& options);
  Status handshake(bootstrap::Role role, const ConnectionOptions& options, Deadline deadline);
  // Posts the automatic receives (VerbsOptions::auto_recv) or options.initial_recvs.
  Status post_initial_recvs(const ConnectionOptions& options);
  Status modify_from_cm(ibv_qp_state state);  // rdma_init_qp_attr + our QpTuning
  // CM mode: resources, INIT, the handshake pipe (its receives first), the data receives.
  Result<std::unique_ptr<CmPipe>> cm_prepare(const ConnectionOptions& options);
  // CM mode, QP in RTS: the bootstrap handshake over `pipe`, then its closing writes.
  Status cm_handshake(CmPipe& pipe, bootstrap::Role role, const ConnectionOptions& options,
                      Deadline deadline);
  int liveness_fd() const noexcept;
  // The checks every post_*() makes before it chains anything, in this order: nothing to
  // post, the connection failed, the requests do not fit in the send queue, one is not well
  // formed. ok means go on (with no requests: nothing to do).
  template <class Request>
  [[nodiscard]] PostStatus admit(std::span<const Request> requests) const noexcept {
    if (requests.empty()) return PostStatus::ok;
    if (failed_.load(std::memory_order_relaxed)) return PostStatus::disconnected;
    if (sq_tail_ - sq_head_ + requests.size() > sq_depth_) return PostStatus::queue_full;
    for (const Request& r : requests)
      if (!r.well_formed()) return PostStatus::invalid;
    return PostStatus::ok;
  }
  // Posts send_wrs_[0, n) (filled, chained) and accounts the slots; `run` is the new
  // unsignaled run. All or nothing, else the connection fails.
  PostStatus submit_send_chain(size_t n, uint32_t run) noexcept;
  // Fills the slot and signaling of request `i` of a chain; returns its send_wrs_ entry.
  ibv_send_wr& prepare_wr(size_t i, uint64_t wr_id, uint32_t length, WcOpcode op, bool report,
                          uint32_t& run) noexcept;

  // Why the connection failed: filled in once, on the data path, without allocating.
  enum class Failure : uint8_t {
    none,
    completion,
    peer_closed,
    closed,
    post_failed,
    qp_error,
    port_down,  // IBV_EVENT_PORT_ERR (async event) since the connection was made
    qp_event,   // a fatal async event named this QP (failure_raw_: the ibv_event_type)
  };
  void fail(Failure why, WcStatus status = WcStatus::fatal, int raw_status = 0,
            uint32_t vendor_err = 0, uint64_t wr_id = 0) noexcept;
  // Peer socket closed? QP in ERR without a completion? A port error or fatal QP event?
  void check_liveness() noexcept;
  size_t reap_send(std::span<Completion> out) noexcept;
  size_t reap_recv(std::span<Completion> out) noexcept;
  void replenish() noexcept;
  PostStatus post_recv_chain(uint32_t count, uint64_t first_wr_id) noexcept;

  // Declaration order is destruction order reversed: the QP goes before the CQs, the CQs
  // before the channel, and the shared state (PD, SRQ, context) last.
  std::shared_ptr<TransportState> state_;
  QpEventSink qp_events_;              // the QP's qp_context: outlives the QP
  uint64_t port_errors_at_start_ = 0;  // the transport's port error count at creation
  CmChannelHandle cm_channel_;         // RDMA CM mode only (else null), like cm_id_
  CmIdHandle cm_id_;
  CompChannelHandle channel_;
  CqHandle send_cq_;
  CqHandle recv_cq_;
  QpHandle qp_;
  bootstrap::Fd socket_;  // the bootstrap socket, kept to notice the peer going away
  PeerInfo peer_;
  std::string name_;  // "verbs connection to <node> (<addr>)", for messages
  uint32_t local_psn_ = 0;
  ibv_mtu path_mtu_ = IBV_MTU_1024;

  // Send queue: one slot per posted work request (ibv wr_id = sequence number). RC
  // completes send requests in order, so a signaled completion retires every earlier slot.
  struct SendSlot {
    uint64_t wr_id = 0;
    uint32_t length = 0;
    WcOpcode op = WcOpcode::rdma_write;
    bool report = false;  // the caller asked for a completion
  };
  std::vector<SendSlot> slots_;
  std::vector<ibv_send_wr> send_wrs_;
  std::vector<ibv_sge> send_sges_;
  std::vector<ibv_recv_wr> recv_wrs_;
  uint64_t sq_head_ = 0;  // oldest sequence not known complete
  uint64_t sq_tail_ = 0;  // next sequence to post
  uint32_t sq_depth_ = 0;
  uint32_t rq_depth_ = 0;
  uint32_t send_cq_floor_ = 0;  // the CQ sizes at creation: never resized below
  uint32_t recv_cq_floor_ = 0;
  uint32_t send_cq_entries_ = 0;  // the sizes last asked of ibv_create_cq / ibv_resize_cq
  uint32_t recv_cq_entries_ = 0;
  uint32_t max_inline_ = 0;
  uint32_t unsignaled_batch_ = kDefaultUnsignaledBatch;
  uint32_t unsignaled_run_ = 0;
  uint32_t rq_posted_ = 0;
  uint32_t handshake_recvs_ = 0;  // CM mode: receives the handshake pipe posts besides ours
  bool auto_recv_ = false;
  uint32_t replenish_batch_ = 32;
  uint32_t consumed_auto_ = 0;
  uint64_t auto_wr_id_ = 0;
  uint64_t next_liveness_check_ns_ = 0;
  int arm_errno_ = 0;  // errno of the last ibv_req_notify_cq that failed in readiness()

  // Completions reaped by wait() before it sleeps (so none is lost), handed out by poll().
  static constexpr size_t kStash = 64;
  std::array<Completion, kStash> stash_{};
  size_t stash_begin_ = 0;
  size_t stash_end_ = 0;

  std::atomic<bool> failed_{false};
  Failure failure_ = Failure::none;
  WcStatus failure_status_ = WcStatus::success;
  int failure_raw_ = 0;
  uint32_t failure_vendor_ = 0;
  uint64_t failure_wr_id_ = 0;
};

}  // namespace rdmarepl::transport::verbs
