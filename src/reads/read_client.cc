// ReadClient: callers on any threads share one engine; one of them at a time (the poller)
// does the I/O for all (docs/reads.md, "The client: one I/O pass for every caller").
#include "rdmarepl/reads/read_client.h"

#include <fmt/format.h>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "async_read.h"
#include "rdmarepl/core/clock.h"
#include "read_engine.h"
#include "replication/transport_select.h"

namespace rdmarepl::reads {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

// Sleeps while `word` holds `expected` (or until a spurious wake-up: callers loop).
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected) noexcept {
  (void)syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected,
                nullptr, nullptr, 0);
}

// Wakes a sleeper on the word at `addr`. The kernel only hashes the address, so the word
// may be gone by now: a wake-up that hits a later sleeper there is spurious, and every
// sleeper loops on its own condition.
void futex_wake(const void* addr) noexcept {
  (void)syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// The client whose callbacks this thread is running (a blocking get() there would wait for
// itself).
thread_local const void* t_running_callbacks_of = nullptr;

}  // namespace

struct ReadClient::Impl {
  Impl(const ReadClientOptions& o, std::unique_ptr<transport::Transport> t)
      : options(o), engine(o, std::move(t)) {
    finished.reserve(256);
    delivered.reserve(256);
  }
  ~Impl();

  // Refuses a Consistency::leader read (`leader`) when no leader is configured (lock held).
  Status leader_available(bool leader) const {
    if (leader && !engine.has_leader())
      return Error(Errc::invalid_argument,
                   "Consistency::leader read, but ReadClientOptions::leader is not set");
    return ok_status();
  }
  // Fills op's request from the caller's keys and consistency (not its keys' storage).
  void prepare(ReadOp& op, const Consistency& c) const;
  Status run(std::span<const std::string_view> keys, const Consistency& c,
             std::vector<ReadResult>& out);
  Status start(std::span<const std::string_view> keys, const Consistency& c, ReadsCallback many,
               ReadCallback one);
  size_t poll(std::chrono::microseconds timeout);
  // One I/O pass by the poller: send what is queued, wake the callers answered in the last
  // pass, block until a response may have come (without the lock, so that other callers
  // can queue), reap.
  void pass(std::unique_lock<std::mutex>& lock, const ReadOp& mine);
  // Leaves the poller role (lock held, released on return): wakes everyone answered, then
  // hands the role to a caller still waiting, if any.
  // `mine`: the leaving poller's own get (nullptr for poll(), which has none). Returns how
  // many callbacks ran.
  size_t hand_off(std::unique_lock<std::mutex>& lock, const ReadOp* mine);
  // The poller's wait for responses (the lock not held): one poll(2) over the links with
  // messages outstanding, for at most 1 ms (`block`) or not at all; with none, a 10 us nap
  // (`block`) as no link can take a message.
  void wait_for_responses(bool block);
  // Waits without the lock until the poller finished `op` or handed it the role.
  static void await(ReadOp& op) noexcept;
  // Wakes the callers of `ops` (the lock not held: an answered op is not touched again).
  static void wake(std::span<ReadOp* const> ops, const ReadOp* mine) noexcept;
  // The poller's delivery of `finished` (the lock not held): wakes the waiting callers and
  // runs the callbacks of the asynchronous gets, which go to `delivered`. Returns how many
  // callbacks ran.
  size_t deliver(const ReadOp* mine) noexcept;
  // Returns `delivered` to the pool (lock held).
  void recycle() noexcept;

  ReadClientOptions options;
  mutable std::mutex mu;
  ReadEngine engine;
  AsyncReadPool async;
  bool poller = false;   // some caller holds the poller role
  bool closing = false;  // the destructor runs: get_async() is refused
  // The poller's own (only the role's holder uses them).
  std::vector<transport::Connection*> waiting;
  std::vector<ReadOp*> finished;
  std::vector<AsyncRead*> delivered;
};

ReadClient::Impl::~Impl() {
  // Nobody drives the client any more: its unanswered asynchronous gets complete here.
  {
    std::lock_guard lock(mu);
    closing = true;
  }
  async.for_each_in_use([](AsyncRead& a) {
    if (!a.op.done)
      a.op.status =
          Error(Errc::closed, "the ReadClient was destroyed before the replicas answered this get");
    a.finish();
  });
}

size_t ReadClient::Impl::deliver(const ReadOp* mine) noexcept {
  delivered.clear();
  size_t ran = 0;
  const void* outer = t_running_callbacks_of;
  t_running_callbacks_of = this;
  for (ReadOp* op : finished) {
    if (op->async == nullptr) {
      wake({&op, 1}, mine);
      continue;
    }
    op->async->finish();
    delivered.push_back(op->async);
    ++ran;
  }
  t_running_callbacks_of = outer;
  return ran;
}

void ReadClient::Impl::recycle() noexcept {
  for (AsyncRead* a : delivered) async.give_back(*a);
  delivered.clear();
}

void ReadClient::Impl::wake(std::span<ReadOp* const> ops, const ReadOp* mine) noexcept {
  for (ReadOp* op : ops) {
    if (op == mine) continue;
    // Once it reads kWoken the caller may return and its op go away: after the exchange
    // only the op's address is used, by the kernel (futex_wake()).
    const void* addr = &op->signal;
    if (op->signal.exchange(kWoken, std::memory_order_acq_rel) == kAsleep) futex_wake(addr);
  }
}

void ReadClient::Impl::await(ReadOp& op) noexcept {
  // A caller that has not gone to sleep yet (signal still kWaiting) is preferred when the
  // poller role is handed over: it takes it without a scheduler round trip.
  uint32_t waiting = kWaiting;
  if (op.signal.compare_exchange_strong(waiting, kAsleep, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
    while (op.signal.load(std::memory_order_acquire) == kAsleep) futex_wait(op.signal, kAsleep);
  }
}

void ReadClient::Impl::wait_for_responses(bool block) {
  if (waiting.empty()) {
    if (block) std::this_thread::sleep_for(std::chrono::microseconds(10));
    return;
  }
  // Wakes as soon as a response arrives. No spinning: a waiting client leaves the cores to
  // the replicas; at most 1 ms, so that gets queued meanwhile go out and deadlines are
  // checked.
  (void)transport::wait_any(waiting, std::chrono::milliseconds(block ? 1 : 0));
}

void ReadClient::Impl::pass(std::unique_lock<std::mutex>& lock, const ReadOp& mine) {
  engine.send_pending();
  if (mine.done) return;
  engine.waiting(waiting);
  engine.take_finished(finished);
  lock.unlock();
  deliver(&mine);
  wait_for_responses(true);
  lock.lock();
  recycle();
  engine.reap();
  engine.expire(mono_ns());
}

size_t ReadClient::Impl::hand_off(std::unique_lock<std::mutex>& lock, const ReadOp* mine) {
  // What was queued meanwhile goes out now, not after the hand-over.
  engine.send_pending();
  // Wake the answered callers while still holding the role: `finished` is the role's.
  engine.take_finished(finished);
  lock.unlock();
  const size_t ran = deliver(mine);
  lock.lock();
  recycle();
  ReadOp* next = engine.waiter_other_than(mine);
  if (next == nullptr) poller = false;
  lock.unlock();
  if (next != nullptr) wake({&next, 1}, nullptr);  // woken not done: it takes the role
  return ran;
}

void ReadClient::Impl::prepare(ReadOp& op, const Consistency& c) const {
  op.leader = c.kind == Consistency::Kind::leader;
  op.header = RequestHeader{};
  op.header.kind = c.kind;
  op.header.shard = c.ticket.shard;
  op.header.min_seq = c.ticket.seq;
  op.header.wait_ms =
      static_cast<uint32_t>(c.kind == Consistency::Kind::at_least ? c.wait.count() : 0);
  op.deadline_ns =
      mono_ns() +
      static_cast<uint64_t>(options.request_timeout.count() + op.header.wait_ms) * 1'000'000;
  op.unanswered = 0;
  op.status = ok_status();
  op.done = false;
  op.signal.store(kWaiting, std::memory_order_relaxed);
}

Status ReadClient::Impl::run(std::span<const std::string_view> keys, const Consistency& c,
                             std::vector<ReadResult>& out) {
  if (t_running_callbacks_of == this)
    return Error(Errc::invalid_argument,
                 "ReadClient::get() called from a get_async() callback, on the thread that "
                 "drives the client's I/O: it would wait for itself; call get_async() there");
  ReadOp op;
  op.keys = keys;
  op.out = &out;
  prepare(op, c);
  std::unique_lock lock(mu);
  RDMAREPL_TRY(leader_available(op.leader));
  engine.enqueue(op);
  if (poller) {
    // The poller answers us, or hands us its role.
    lock.unlock();
    await(op);
    if (op.done) return std::move(op.status);
    lock.lock();
    op.signal.store(kWaiting, std::memory_order_relaxed);
  }
  poller = true;
  while (!op.done) pass(lock, op);
  (void)hand_off(lock, &op);
  return std::move(op.status);
}

Status ReadClient::Impl::start(std::span<const std::string_view> keys, const Consistency& c,
                               ReadsCallback many, ReadCallback one) {
  std::unique_lock lock(mu);
  if (closing) return Error(Errc::closed, "get_async() while the ReadClient is being destroyed");
  RDMAREPL_TRY(leader_available(c.kind == Consistency::Kind::leader));
  AsyncRead& a = async.take();
  a.views.assign(keys.begin(), keys.end());
  a.results.assign(keys.size(), ReadResult{});
  a.many = std::move(many);
  a.one = std::move(one);
  a.op.keys = a.views;
  a.op.out = &a.results;
  prepare(a.op, c);
  if (keys.empty()) {
    engine.answer_now(a.op);  // nothing to ask: delivered by the next poll, like any other
  } else {
    engine.enqueue(a.op);
  }
  return ok_status();
}

size_t ReadClient::Impl::poll(std::chrono::microseconds timeout) {
  std::unique_lock lock(mu);
  if (poller) return 0;
  poller = true;
  const uint64_t deadline = mono_ns() + static_cast<uint64_t>(timeout.count()) * 1000;
  size_t ran = 0;
  bool last_look = false;
  for (;;) {
    engine.send_pending();
    engine.take_finished(finished);
    if (!finished.empty()) {
      lock.unlock();
      ran += deliver(nullptr);
      lock.lock();
      recycle();
      continue;  // send what the callbacks queued
    }
    if (ran > 0 || !engine.busy() || last_look) break;
    const uint64_t now = mono_ns();
    // Past the deadline: one more look without blocking, so that poll(0) reaps too.
    last_look = now >= deadline;
    engine.waiting(waiting);
    lock.unlock();
    wait_for_responses(!last_look);
    lock.lock();
    engine.reap();
    engine.expire(mono_ns());
  }
  ran += hand_off(lock, nullptr);  // to a blocking get() waiting, if any
  return ran;
}

ReadClient::ReadClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ReadClient::~ReadClient() = default;

Result<std::unique_ptr<ReadClient>> ReadClient::connect(const ReadClientOptions& options) {
  RDMAREPL_TRY(options.validate());
  auto t = replication::select_transport(options.transport);
  if (!t.ok()) return std::move(t).error();
  auto impl = std::make_unique<Impl>(options, std::move(*t));
  std::string why;
  if (!impl->engine.open_all(why))
    return Error(Errc::connection_refused,
                 fmt::format("no read replica is reachable:{} start their read servers or check "
                             "ReadClientOptions",
                             why));
  return std::unique_ptr<ReadClient>(new ReadClient(std::move(impl)));
}

Result<std::vector<ReadResult>> ReadClient::get(std::span<const std::string_view> keys,
                                                const Consistency& consistency) {
  std::vector<ReadResult> out(keys.size());
  if (keys.empty()) return out;
  RDMAREPL_TRY(impl_->run(keys, consistency, out));
  return out;
}

Result<ReadResult> ReadClient::get(std::string_view key, const Consistency& consistency) {
  auto r = get(std::span<const std::string_view>(&key, 1), consistency);
  if (!r.ok()) return std::move(r).error();
  return std::move((*r)[0]);
}

Status ReadClient::get_async(std::span<const std::string_view> keys, const Consistency& consistency,
                             ReadsCallback done) {
  return impl_->start(keys, consistency, std::move(done), nullptr);
}

Status ReadClient::get_async(std::string_view key, const Consistency& consistency,
                             ReadCallback done) {
  return impl_->start(std::span<const std::string_view>(&key, 1), consistency, nullptr,
                      std::move(done));
}

size_t ReadClient::poll(std::chrono::microseconds timeout) {
  return impl_->poll(timeout);
}

size_t ReadClient::live_replicas() const {
  std::lock_guard lock(impl_->mu);
  return impl_->engine.live_replicas();
}

}  // namespace rdmarepl::reads
