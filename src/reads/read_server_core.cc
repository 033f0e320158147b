// The read server: an accepting thread and a serving thread over one transport instance.
#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "core/repeat_limiter.h"
#include "core/thread_name.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"
#include "rdmarepl/reads/read_server.h"
#include "read_format.h"
#include "replication/listen_policy.h"
#include "replication/transport_select.h"
#include "server_connection.h"

namespace rdmarepl::reads {
namespace {

constexpr auto kAcceptSlice = std::chrono::milliseconds(100);
// The serving thread blocks in one poll(2) over every client's connection
// (transport::wait_any) for up to kIdleWait, and reads only the connections it found
// readable. It does not spin: on a small machine a spinning server takes the CPU its
// clients need, and a poll(2) that finds requests waiting returns at once.
constexpr auto kIdleWait = std::chrono::milliseconds(1);
// When every client slot is taken, a client that sent no request for this long makes room
// for a new one.
constexpr auto kEvictAfterIdle = std::chrono::milliseconds(1000);
// How often parked at_least reads look at the applied seq again.
constexpr auto kParkedNap = std::chrono::microseconds(20);

class ServerImpl final : public ReadServerCore {
 public:
  ServerImpl(const ReadServerOptions& options, const ReadHooks& hooks,
             std::unique_ptr<transport::Transport> transport,
             std::unique_ptr<transport::Listener> listener)
      : options_(options),
        hooks_(hooks),
        transport_(std::move(transport)),
        listener_(std::move(listener)),
        endpoint_(listener_->local_endpoint()) {
    Hello h{kServerHelloMagic, options.leader, options.queue_depth, options.max_request_bytes,
            options.max_response_bytes};
    hello_.resize(kHelloBytes);
    encode_hello(h, reinterpret_cast<uint8_t*>(hello_.data()));
    acceptor_ = std::thread([this] { accept_loop(); });
    server_ = std::thread([this] { serve_loop(); });
  }
  ~ServerImpl() override { close(); }

  transport::Endpoint local_endpoint() const override { return endpoint_; }
  ReadServerStats stats() const override {
    ReadServerStats s;
    s.connections = connections_.load(std::memory_order_relaxed);
    s.requests = requests_.load(std::memory_order_relaxed);
    s.keys = keys_.load(std::memory_order_relaxed);
    s.bad_requests = bad_.load(std::memory_order_relaxed);
    s.behind = behind_.load(std::memory_order_relaxed);
    s.handshake_timeouts = handshake_timeouts_.load(std::memory_order_relaxed);
    s.handshakes_refused = handshakes_refused_.load(std::memory_order_relaxed);
    return s;
  }
  void close() noexcept override {
    if (stop_.exchange(true)) return;
    if (acceptor_.joinable()) acceptor_.join();
    if (server_.joinable()) server_.join();
  }

 private:
  void accept_loop() {
    core::name_this_thread("rr-read-accept");
    transport::ConnectionOptions co;
    co.node_id = options_.node_id;
    co.pre_shared_key = options_.pre_shared_key;
    co.app_data = hello_;
    co.send_queue_depth = options_.queue_depth + 2;
    co.recv_queue_depth = options_.queue_depth + 2;
    co.connect_timeout = options_.connect_timeout;
    co.counters.timeouts = &handshake_timeouts_;
    co.counters.refused = &handshakes_refused_;
    while (!stop_.load(std::memory_order_relaxed)) {
      auto conn = listener_->accept(co, kAcceptSlice);
      if (!conn.ok()) {
        // A refused client was logged by the listener (rate-limited per address).
        if (transport::options_refused(conn.error()))
          log::error("reads: cannot accept clients on {}: {}", endpoint_.to_string(),
                     conn.error().message());
        continue;
      }
      admit(std::move(*conn));
    }
  }

  void admit(std::unique_ptr<transport::Connection> conn) {
    Hello client;
    std::string_view why;
    const std::string who = fmt::format("'{}' at {}", conn->peer().node_id, conn->peer().address);
    if (!parse_hello(conn->peer().app_data, kClientHelloMagic, client, why)) {
      log::warn("reads: refused client {}: {}", who, why);
      conn->close();
      return;
    }
    // Full: a client idle for kEvictAfterIdle makes room (the serving thread closes the one
    // idle the longest); with none, the new client is refused.
    if (connections_.load() >= options_.max_connections && evictable_.load() == 0) {
      uint64_t held_back = 0;
      if (log_limiter_.admit("full", held_back))
        log::warn(
            "reads: refused client {}: already {} clients (ReadServerOptions::max_connections), "
            "each with a request in the last {} ms{}",
            who, options_.max_connections, kEvictAfterIdle.count(),
            held_back_note(held_back, log_limiter_.interval()));
      conn->close();
      return;
    }
    auto sc = ServerConnection::start(*transport_, std::move(conn), options_, hooks_);
    if (!sc.ok()) {
      log::warn("reads: could not serve client {}: {}", who, sc.error().message());
      return;
    }
    std::lock_guard lock(mu_);
    incoming_.push_back(std::move(*sc));
    connections_.fetch_add(1);
  }

  void serve_loop() {
    core::name_this_thread("rr-read-serve");
    std::vector<std::unique_ptr<ServerConnection>> live;
    std::vector<transport::Connection*> conns;  // live's, for wait_any()
    ServeCounters c;
    while (!stop_.load(std::memory_order_relaxed)) {
      {
        std::lock_guard lock(mu_);
        for (auto& s : incoming_) live.push_back(std::move(s));
        incoming_.clear();
      }
      const uint64_t now = mono_ns();
      while (live.size() > options_.max_connections) evict(live, now);
      size_t work = 0;
      uint32_t evictable = 0;
      for (size_t i = 0; i < live.size();) {
        bool alive = true;
        work += live[i]->serve(now, c, alive);
        if (!alive) {
          live[i] = std::move(live.back());
          live.pop_back();
          connections_.fetch_sub(1);
          continue;
        }
        if (idle_long(*live[i], now)) ++evictable;
        ++i;
      }
      evictable_.store(evictable, std::memory_order_relaxed);
      requests_.store(c.requests, std::memory_order_relaxed);
      keys_.store(c.keys, std::memory_order_relaxed);
      bad_.store(c.bad_requests, std::memory_order_relaxed);
      behind_.store(c.behind, std::memory_order_relaxed);
      if (live.empty()) {
        std::this_thread::sleep_for(kIdleWait);
        continue;
      }
      // Parked at_least reads wait for the channel to apply, which raises no event here:
      // look again soon.
      bool parked = false;
      conns.clear();
      for (auto& l : live) {
        conns.push_back(&l->connection());
        parked = parked || l->has_parked();
      }
      if (parked && work == 0) std::this_thread::sleep_for(kParkedNap);
      (void)transport::wait_any(conns, parked ? std::chrono::milliseconds(0) : kIdleWait);
    }
    for (auto& s : live) s->connection().close();
  }

  // Whether `c` sent no request for kEvictAfterIdle and waits for nothing.
  static bool idle_long(const ServerConnection& c, uint64_t now) noexcept {
    return !c.has_parked() &&
           now - c.last_request_ns() >=
               static_cast<uint64_t>(std::chrono::nanoseconds(kEvictAfterIdle).count());
  }
  // One connection over max_connections: the one idle the longest goes if it is idle long,
  // else the newest (the client just admitted) is refused.
  void evict(std::vector<std::unique_ptr<ServerConnection>>& live, uint64_t now) {
    size_t victim = live.size() - 1;
    for (size_t i = 0; i < live.size(); ++i)
      if (idle_long(*live[i], now) &&
          (!idle_long(*live[victim], now) ||
           live[i]->last_request_ns() < live[victim]->last_request_ns()))
        victim = i;
    uint64_t held_back = 0;
    if (log_limiter_.admit("evicted", held_back))
      log::warn(
          "reads: closed the connection of {}: {} clients are connected "
          "(ReadServerOptions::max_connections) and {}{}",
          live[victim]->peer_name(), options_.max_connections,
          idle_long(*live[victim], now)
              ? fmt::format("it sent no request for {} ms; a new client takes its place",
                            (now - live[victim]->last_request_ns()) / 1'000'000)
              : std::string("every other client sent a request within the last second"),
          held_back_note(held_back, log_limiter_.interval()));
    live[victim]->connection().close();
    live[victim] = std::move(live.back());
    live.pop_back();
    connections_.fetch_sub(1);
  }

  ReadServerOptions options_;
  ReadHooks hooks_;
  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<transport::Listener> listener_;
  transport::Endpoint endpoint_;
  std::string hello_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::unique_ptr<ServerConnection>> incoming_;
  std::atomic<uint64_t> connections_{0};
  std::atomic<uint32_t> evictable_{0};  // live connections idle_long(), as last counted
  RepeatLimiter log_limiter_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> keys_{0};
  std::atomic<uint64_t> bad_{0};
  std::atomic<uint64_t> behind_{0};
  std::atomic<uint64_t> handshake_timeouts_{0};
  std::atomic<uint64_t> handshakes_refused_{0};
  std::thread acceptor_;
  std::thread server_;
};

}  // namespace

Result<std::unique_ptr<ReadServerCore>> ReadServerCore::create(const ReadServerOptions& options,
                                                               const ReadHooks& hooks) {
  RDMAREPL_TRY(options.validate());
  auto transport = replication::select_transport(options.transport);
  if (!transport.ok()) return std::move(transport).error();
  auto listener = (*transport)->listen(options.listen);
  if (!listener.ok()) {
    return Error(listener.error().code(),
                 fmt::format("read server: cannot listen on {}: {}", options.listen.to_string(),
                             listener.error().message()));
  }
  if (replication::detail::open_to_network(options.listen.host, options.pre_shared_key))
    log::warn(
        "reads: serving on {} without a pre_shared_key (allow_unauthenticated): any host that "
        "reaches this port can read the whole store",
        (*listener)->local_endpoint().to_string());
  return std::unique_ptr<ReadServerCore>(
      new ServerImpl(options, hooks, std::move(*transport), std::move(*listener)));
}

}  // namespace rdmarepl::reads
