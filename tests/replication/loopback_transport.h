// An in-process transport for deterministic engine tests: both ends of a connection live in
// one process and a write-with-immediate is a checked memcpy into the peer's registered
// region plus a receive completion. As with RDMA, the bytes are placed at post time, on the
// sender's thread (the NIC places a write whenever it does, not when the receiver polls), so
// ThreadSanitizer sees a writer that overwrites bytes the receiver is still reading; the
// completion is delivered by the receiver's own poll() or post_recvs(), in order. Like RC
// verbs with rnr_retry = 7, a write whose completion finds no posted receive waits (in order)
// until one is posted, unless the fabric is strict about it (LoopbackFabric::rnr_fails: such
// a write fails the connection, as verbs does once rnr_retry runs out). Nothing is placed
// once either end has failed or been closed. A hook can corrupt or drop writes.
// The real transports are tested by their conformance suite; this one only has to be
// faithful enough for the replication engine's logic.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/transport/transport.h"

namespace rdmarepl::test {

using namespace rdmarepl::transport;

class LoopbackFabric;

// Decides the fate of one write before it is delivered: return false to fail the
// connection (as if the link dropped); may modify the bytes (a copy) to corrupt them.
using WriteHook = std::function<bool(const WriteRequest&, std::vector<std::byte>& bytes)>;

class LoopbackRegion final : public MemoryRegion {
 public:
  explicit LoopbackRegion(RegisteredRegion r) : r_(r) {}
  const RegisteredRegion& region() const noexcept override { return r_; }

 private:
  RegisteredRegion r_;
};

struct LoopbackEnd;

// Regions one process registered: the responder checks rkey and range against them.
struct RegionTable {
  std::mutex mu;
  std::vector<RegisteredRegion> regions;
  uint32_t next_key = 1;
  bool check(uint64_t addr, uint32_t len, uint32_t rkey, Access need = Access::remote_write) {
    std::lock_guard lock(mu);
    for (auto& r : regions) {
      auto base = reinterpret_cast<uint64_t>(r.addr);
      if (r.keys.rkey == rkey && has(r.access, need) && addr >= base &&
          addr + len <= base + r.length)
        return true;
    }
    return false;
  }
};

// A write placed (or a send's bytes copied) whose receive completion waits for a receive.
struct LoopbackPending {
  WriteRequest wr;
  bool send = false;
  std::vector<std::byte> bytes;  // a send's payload
};

// A posted receive: zero-length (post_recvs, numbered from next_recv_id) or a buffer.
struct LoopbackRecv {
  uint64_t wr_id = 0;
  void* addr = nullptr;
  uint32_t length = 0;
};

struct LoopbackEnd {
  std::mutex mu;
  std::deque<Completion> cq;
  std::deque<LoopbackPending> pending;  // placed, their completions waiting for receives
  std::deque<LoopbackRecv> rq;
  uint64_t next_recv_id = 0;
  bool failed = false;
  std::string why;
  std::shared_ptr<RegionTable> table;
  std::weak_ptr<LoopbackEnd> peer;
  PeerInfo info;
  WriteHook hook;
  // Set when the fabric is strict about RNR: where such failures are counted.
  std::atomic<uint64_t>* rnr_errors = nullptr;

  // Caller holds mu.
  void post_zero_length_locked(uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) rq.push_back(LoopbackRecv{next_recv_id++, nullptr, 0});
  }
  void deliver_locked() {
    while (!pending.empty() && !rq.empty() && !failed) {
      const LoopbackPending& p = pending.front();
      const LoopbackRecv r = rq.front();
      rq.pop_front();
      Completion c;
      c.wr_id = r.wr_id;
      c.imm = p.send ? 0 : p.wr.imm;
      c.byte_len = static_cast<uint32_t>(p.send ? p.bytes.size() : p.wr.total_length());
      c.opcode = p.send ? WcOpcode::recv : WcOpcode::recv_rdma_with_imm;
      if (p.send && p.bytes.size() > r.length) {
        c.status = WcStatus::local_length_error;
        cq.push_back(c);
        fail_locked("a send longer than the posted receive buffer");
        return;
      }
      if (p.send && !p.bytes.empty()) std::memcpy(r.addr, p.bytes.data(), p.bytes.size());
      cq.push_back(c);
      pending.pop_front();
    }
  }
  void fail_locked(std::string reason) {
    if (failed) return;
    failed = true;
    why = std::move(reason);
    pending.clear();
    Completion c;
    c.status = WcStatus::flushed;
    cq.push_back(c);
  }
};

class LoopbackConnection final : public Connection {
 public:
  explicit LoopbackConnection(std::shared_ptr<LoopbackEnd> me) : me_(std::move(me)) {}
  ~LoopbackConnection() override { close(); }

  PostStatus post_writes(std::span<const WriteRequest> reqs) noexcept override {
    auto peer = me_->peer.lock();
    {
      std::lock_guard lock(me_->mu);
      if (me_->failed || !peer) return PostStatus::disconnected;
    }
    for (const auto& wr : reqs) {
      if (!wr.well_formed()) return PostStatus::invalid;
      const auto total = static_cast<uint32_t>(wr.total_length());
      std::vector<std::byte> bytes(total);
      size_t at = 0;  // gather every segment, in order
      for (size_t i = 0; i < wr.segment_count(); ++i) {
        LocalSegment g = wr.segment(i);
        if (g.length != 0) std::memcpy(bytes.data() + at, g.addr, g.length);
        at += g.length;
      }
      bool keep = true;
      if (me_->hook) keep = me_->hook(wr, bytes);
      const bool ok = total == 0 || peer->table->check(wr.remote_addr, total, wr.rkey);
      if (!keep || !ok) {
        fail_both(*peer, keep ? "remote access error" : "dropped by the test hook");
        return PostStatus::ok;  // the failure shows up as completions
      }
      if (me_->rnr_errors != nullptr) {
        // Receives not yet claimed by the writes already waiting for the receiver's poll.
        std::unique_lock lock(peer->mu);
        if (!peer->failed && peer->rq.size() <= peer->pending.size()) {
          lock.unlock();
          ++*me_->rnr_errors;
          fail_both(*peer, "RNR: the write found no posted receive");
          return PostStatus::ok;  // the failure shows up as completions
        }
      }
      {
        // Placed now, on this thread; only the completion waits for the peer's poll().
        std::lock_guard lock(peer->mu);
        if (peer->failed) return PostStatus::disconnected;
        if (!bytes.empty())
          std::memcpy(reinterpret_cast<void*>(wr.remote_addr), bytes.data(), bytes.size());
        peer->pending.push_back(LoopbackPending{wr, false, {}});
      }
      if (wr.signaled) {
        std::lock_guard lock(me_->mu);
        Completion c;
        c.wr_id = wr.wr_id;
        c.byte_len = static_cast<uint32_t>(wr.total_length());
        c.opcode = WcOpcode::rdma_write;
        me_->cq.push_back(c);
      }
    }
    return PostStatus::ok;
  }
  PostStatus post_recvs(uint32_t count, uint64_t) noexcept override {
    std::lock_guard lock(me_->mu);
    if (me_->failed) return PostStatus::disconnected;
    me_->post_zero_length_locked(count);
    me_->deliver_locked();
    return PostStatus::ok;
  }
  PostStatus post_recv_buffers(std::span<const RecvBuffer> buffers) noexcept override {
    std::lock_guard lock(me_->mu);
    if (me_->failed) return PostStatus::disconnected;
    for (const auto& b : buffers) me_->rq.push_back(LoopbackRecv{b.wr_id, b.addr, b.length});
    me_->deliver_locked();
    return PostStatus::ok;
  }
  // A send's bytes are copied at post time and land in the peer's receive when one is there.
  PostStatus post_sends(std::span<const SendRequest> reqs) noexcept override {
    auto peer = me_->peer.lock();
    {
      std::lock_guard lock(me_->mu);
      if (me_->failed || !peer) return PostStatus::disconnected;
    }
    for (const auto& r : reqs) {
      LoopbackPending p;
      p.send = true;
      p.bytes.resize(r.length);
      if (r.length > 0) std::memcpy(p.bytes.data(), r.local_addr, r.length);
      {
        std::lock_guard lock(peer->mu);
        if (peer->failed) return PostStatus::disconnected;
        peer->pending.push_back(std::move(p));
      }
      if (r.signaled) {
        std::lock_guard lock(me_->mu);
        me_->cq.push_back(Completion{r.wr_id, 0, r.length, WcOpcode::send, WcStatus::success});
      }
    }
    return PostStatus::ok;
  }
  // A read copies from the peer's region at post time.
  PostStatus post_reads(std::span<const ReadRequest> reqs) noexcept override {
    auto peer = me_->peer.lock();
    {
      std::lock_guard lock(me_->mu);
      if (me_->failed || !peer) return PostStatus::disconnected;
    }
    for (const auto& r : reqs) {
      if (r.length > 0 &&
          !peer->table->check(r.remote_addr, r.length, r.rkey, Access::remote_read)) {
        {
          std::lock_guard lock(me_->mu);
          me_->cq.push_back(
              Completion{r.wr_id, 0, 0, WcOpcode::rdma_read, WcStatus::remote_access_error});
        }
        fail_both(*peer, "remote access error (read)");
        return PostStatus::ok;
      }
      if (r.length > 0)
        std::memcpy(r.local_addr, reinterpret_cast<const void*>(r.remote_addr), r.length);
      std::lock_guard lock(me_->mu);
      me_->cq.push_back(Completion{r.wr_id, 0, r.length, WcOpcode::rdma_read, WcStatus::success});
    }
    return PostStatus::ok;
  }
  size_t poll(std::span<Completion> out) noexcept override {
    std::lock_guard lock(me_->mu);
    me_->deliver_locked();
    size_t n = 0;
    while (n < out.size() && !me_->cq.empty()) {
      out[n++] = me_->cq.front();
      me_->cq.pop_front();
    }
    return n;
  }
  Status wait(std::chrono::milliseconds) override { return {}; }
  bool healthy() const noexcept override {
    std::lock_guard lock(me_->mu);
    return !me_->failed;
  }
  Error error() const override {
    std::lock_guard lock(me_->mu);
    return me_->failed ? Error(Errc::connection_closed, me_->why) : Error();
  }
  const PeerInfo& peer() const noexcept override { return me_->info; }
  void close() noexcept override {
    if (auto peer = me_->peer.lock()) fail_both(*peer, "closed");
  }

 private:
  void fail_both(LoopbackEnd& peer, const std::string& why) {
    {
      std::lock_guard lock(me_->mu);
      me_->fail_locked(why);
    }
    std::lock_guard lock(peer.mu);
    peer.fail_locked("peer: " + why);
  }
  std::shared_ptr<LoopbackEnd> me_;
};

// Listeners by port, shared by every LoopbackTransport of one test.
class LoopbackFabric {
 public:
  struct Incoming {
    std::shared_ptr<LoopbackEnd> end;
    ConnectionOptions initiator;
    std::shared_ptr<LoopbackEnd> initiator_end;
  };
  struct Port {
    std::mutex mu;
    // Acceptor ends, handshake done, with the accept() call whose options they used.
    std::deque<std::pair<std::shared_ptr<LoopbackEnd>, uint64_t>> queue;
    ConnectionOptions options;  // the acceptor's current options
    bool has_options = false;
    uint64_t accept_call = 0;  // which accept() call set `options`
    std::shared_ptr<RegionTable> table;
    std::condition_variable cv;
  };
  std::mutex mu;
  std::map<uint16_t, std::shared_ptr<Port>> ports;
  uint16_t next_port = 20000;
  WriteHook leader_hook;  // applied to writes from connecting sides
  // A write-with-imm that finds no posted receive fails both ends (counted in rnr_errors).
  bool rnr_fails = false;
  std::atomic<uint64_t> rnr_errors{0};
  // Connections established while the acceptor had no receives posted by the handshake
  // (ConnectionOptions::initial_recvs == 0): the initiator may write before the acceptor
  // posts any.
  std::atomic<uint64_t> accepted_without_recvs{0};
  // Every connection end made so far (expired ones are skipped): fail_all() pulls the cable.
  std::vector<std::weak_ptr<LoopbackEnd>> ends;
  // Fails every live connection as a link that went down would; returns how many it failed.
  size_t fail_all(const std::string& why) {
    std::vector<std::shared_ptr<LoopbackEnd>> live;
    {
      std::lock_guard lock(mu);
      for (auto& w : ends)
        if (auto e = w.lock()) live.push_back(std::move(e));
    }
    size_t n = 0;
    for (auto& e : live) {
      std::lock_guard lock(e->mu);
      n += e->failed ? 0 : 1;
      e->fail_locked(why);
    }
    return n;
  }
};

class LoopbackListener final : public Listener {
 public:
  LoopbackListener(std::shared_ptr<LoopbackFabric> f, std::shared_ptr<LoopbackFabric::Port> p,
                   uint16_t port)
      : fabric_(std::move(f)), port_(std::move(p)), number_(port) {}
  ~LoopbackListener() override {
    std::lock_guard lock(fabric_->mu);
    fabric_->ports.erase(number_);
  }
  Result<std::unique_ptr<Connection>> accept(const ConnectionOptions& options,
                                             std::chrono::milliseconds timeout) override {
    // As with a real transport, a connection's handshake carries the options of the accept()
    // call that returns it: a connection made against an earlier call's options is failed
    // (its initiator sees it drop and reconnects).
    std::unique_lock lock(port_->mu);
    port_->options = options;
    port_->has_options = true;
    const uint64_t call = ++port_->accept_call;
    port_->cv.notify_all();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (!port_->cv.wait_until(lock, deadline, [&] { return !port_->queue.empty(); })) {
        // As with TCP and verbs, whose handshake runs inside accept(): an initiator completes
        // its connect() only while an accept() call offers its options, never against the
        // options of a call that already returned.
        port_->has_options = false;
        return Error(Errc::timeout, "no connection");
      }
      auto [end, made_by] = port_->queue.front();
      port_->queue.pop_front();
      if (made_by == call) {
        port_->has_options = false;
        return std::unique_ptr<Connection>(new LoopbackConnection(end));
      }
      LoopbackConnection(end).close();  // handshake of a stale accept(): fail both ends
    }
  }
  Endpoint local_endpoint() const override { return {"loopback", number_}; }

 private:
  std::shared_ptr<LoopbackFabric> fabric_;
  std::shared_ptr<LoopbackFabric::Port> port_;
  uint16_t number_;
};

class LoopbackTransport final : public Transport {
 public:
  explicit LoopbackTransport(std::shared_ptr<LoopbackFabric> f)
      : fabric_(std::move(f)), table_(std::make_shared<RegionTable>()) {}
  std::string_view name() const noexcept override { return "loopback"; }
  Result<std::unique_ptr<MemoryRegion>> register_memory(void* addr, size_t len,
                                                        Access access) override {
    auto r = register_raw(addr, len, access);
    if (!r.ok()) return r.error();
    return std::unique_ptr<MemoryRegion>(new LoopbackRegion(*r));
  }
  Result<RegisteredRegion> register_raw(void* addr, size_t len, Access access) override {
    std::lock_guard lock(table_->mu);
    RegisteredRegion r{addr, len, {table_->next_key, table_->next_key}, access, nullptr};
    ++table_->next_key;
    table_->regions.push_back(r);
    return r;
  }
  void deregister_raw(const RegisteredRegion& region) noexcept override {
    std::lock_guard lock(table_->mu);
    std::erase_if(table_->regions, [&](auto& r) { return r.keys == region.keys; });
  }
  Result<std::unique_ptr<Listener>> listen(const Endpoint& where) override {
    std::lock_guard lock(fabric_->mu);
    uint16_t port = where.port != 0 ? where.port : fabric_->next_port++;
    auto p = std::make_shared<LoopbackFabric::Port>();
    p->table = table_;
    fabric_->ports[port] = p;
    return std::unique_ptr<Listener>(new LoopbackListener(fabric_, p, port));
  }
  Result<std::unique_ptr<Connection>> connect(const Endpoint& where,
                                              const ConnectionOptions& options) override {
    std::shared_ptr<LoopbackFabric::Port> p;
    {
      std::lock_guard lock(fabric_->mu);
      auto it = fabric_->ports.find(where.port);
      if (it == fabric_->ports.end())
        return Error(Errc::connection_refused, "nothing listens on " + where.to_string());
      p = it->second;
    }
    std::unique_lock lock(p->mu);
    if (!p->cv.wait_for(lock, options.connect_timeout, [&] { return p->has_options; }))
      return Error(Errc::timeout, "acceptor never ready");
    // One accept() call completes one handshake: this connection takes the call, and another
    // initiator waits for the next one (instead of queueing against options a call that
    // already returned a connection offered, and being failed as stale).
    p->has_options = false;
    auto mine = std::make_shared<LoopbackEnd>();
    auto theirs = std::make_shared<LoopbackEnd>();
    mine->table = table_;
    theirs->table = p->table;
    mine->peer = theirs;
    theirs->peer = mine;
    mine->info = PeerInfo{
        p->options.node_id, where.to_string(), p->options.regions, p->options.app_data, {}};
    theirs->info =
        PeerInfo{options.node_id, "loopback:client", options.regions, options.app_data, {}};
    // With a pre-shared key on both sides, session keys as the bootstrap handshake would
    // derive them: one per direction, the same on both ends, and a digest key that depends
    // on the pre-shared key alone.
    if (!options.pre_shared_key.empty() && !p->options.pre_shared_key.empty()) {
      std::random_device rd;
      for (auto& b : mine->info.session_keys.send) b = static_cast<uint8_t>(rd());
      for (auto& b : mine->info.session_keys.recv) b = static_cast<uint8_t>(rd());
      const std::string_view psk = options.pre_shared_key;
      for (size_t i = 0; i < mine->info.session_keys.digest.size(); ++i)
        mine->info.session_keys.digest[i] =
            static_cast<uint8_t>(static_cast<uint8_t>(psk[i % psk.size()]) ^ (i * 31));
      mine->info.session_keys.set = true;
      theirs->info.session_keys = {mine->info.session_keys.recv, mine->info.session_keys.send,
                                   mine->info.session_keys.digest, true};
    }
    mine->hook = fabric_->leader_hook;
    mine->post_zero_length_locked(options.initial_recvs);  // ConnectionOptions::initial_recvs
    theirs->post_zero_length_locked(p->options.initial_recvs);
    if (p->options.initial_recvs == 0) ++fabric_->accepted_without_recvs;
    if (fabric_->rnr_fails) mine->rnr_errors = theirs->rnr_errors = &fabric_->rnr_errors;
    {
      std::lock_guard fabric_lock(fabric_->mu);
      std::erase_if(fabric_->ends, [](const auto& w) { return w.expired(); });
      fabric_->ends.push_back(mine);
      fabric_->ends.push_back(theirs);
    }
    p->queue.emplace_back(theirs, p->accept_call);
    p->cv.notify_all();
    return std::unique_ptr<Connection>(new LoopbackConnection(mine));
  }

 private:
  std::shared_ptr<LoopbackFabric> fabric_;
  std::shared_ptr<RegionTable> table_;
};

}  // namespace rdmarepl::test
