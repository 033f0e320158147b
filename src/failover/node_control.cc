// NodeControl: a ReplicaNode's control plane (docs/failover.md, "How a leader takes over").
//   lease thread    keeps the node's lease alive; a leader's acknowledgement deadline is the
//                   send time of its last successful renewal plus (1 - lease_margin) x TTL
//   control thread  every poll_interval: looks at the election key and acts:
//     - a leader that lost its key, its lease or its deadline steps down (fences itself);
//     - a new leadership E: wait for its history at epochs/E, check that this member's
//       records are a prefix of it (else empty the store and the log), follow E only;
//     - nobody leads: fence, report (last seq, the epoch that wrote it), and campaign only
//       when a majority has reported since the last leadership and none is more up to date.
#include "rdmarepl/failover/detail/node_control.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "history.h"
#include "log_rewind.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/log.h"

namespace rdmarepl::failover {

std::string_view to_string(NodeRole r) noexcept {
  switch (r) {
    case NodeRole::none:
      return "none";
    case NodeRole::leader:
      return "leader";
    case NodeRole::follower:
      return "follower";
  }
  return "?";
}

Status validate(const NodeOptions& o) {
  if (o.group.empty() || o.group.find('/') != std::string::npos)
    return Error(Errc::invalid_argument,
                 fmt::format("NodeOptions::group = '{}'; name the group with a non-empty name "
                             "without '/'",
                             o.group));
  if (o.members.empty())
    return Error(Errc::invalid_argument, "NodeOptions::members is empty; list every member");
  if (std::none_of(o.members.begin(), o.members.end(),
                   [&](const Member& m) { return m.id == o.id; }))
    return Error(
        Errc::invalid_argument,
        fmt::format("NodeOptions::id '{}' is not one of NodeOptions::members; add it", o.id));
  for (size_t i = 0; i < o.members.size(); ++i)
    for (size_t j = i + 1; j < o.members.size(); ++j)
      if (o.members[i].id == o.members[j].id)
        return Error(Errc::invalid_argument,
                     fmt::format("NodeOptions::members names '{}' twice; give each member its "
                                 "own id",
                                 o.members[i].id));
  if (o.dir.empty())
    return Error(Errc::invalid_argument,
                 "NodeOptions::dir is empty; a member keeps its log and history there");
  if (o.lease_ttl < std::chrono::seconds(1))
    return Error(Errc::invalid_argument,
                 fmt::format("NodeOptions::lease_ttl = {} ms; etcd grants whole seconds: use at "
                             "least 1000 ms",
                             o.lease_ttl.count()));
  if (!(o.lease_margin > 0.0 && o.lease_margin < 0.9))
    return Error(Errc::invalid_argument,
                 fmt::format("NodeOptions::lease_margin = {}; use a fraction in (0, 0.9), e.g. "
                             "0.2",
                             o.lease_margin));
  if (o.poll_interval < std::chrono::milliseconds(1) || o.poll_interval * 4 > o.lease_ttl)
    return Error(Errc::invalid_argument,
                 fmt::format("NodeOptions::poll_interval = {} ms; use 1 ms .. a quarter of "
                             "lease_ttl ({} ms)",
                             o.poll_interval.count(), o.lease_ttl.count() / 4));
  if (o.suspect_after.count() < 0 || o.suspect_after >= o.lease_ttl)
    return Error(Errc::invalid_argument,
                 fmt::format("NodeOptions::suspect_after = {} ms; use 0 (off) or less than "
                             "lease_ttl ({} ms), e.g. 200 ms",
                             o.suspect_after.count(), o.lease_ttl.count()));
  if (o.channel.shards != 1)
    return Error(Errc::unsupported,
                 fmt::format("NodeOptions::channel.shards = {}; a failover group replicates one "
                             "shard (docs/failover.md, \"Limits\"): set shards = 1",
                             o.channel.shards));
  if (o.coordinator == nullptr) {
    if (auto st = coordination::validate(o.etcd); !st) return st;
  }
  return ok_status();
}

namespace detail {
namespace {

using nlohmann::json;
constexpr uint64_t kNobody = std::numeric_limits<uint64_t>::max();
int64_t now_ns() noexcept {
  return static_cast<int64_t>(mono_ns());
}

std::string epoch_key(const std::string& root, uint64_t epoch) {
  return fmt::format("{}epochs/{:020}", root, epoch);
}

}  // namespace

struct NodeControl::Impl {
  Impl(const NodeOptions& o, NodeHost& h, RoleFn fn, std::shared_ptr<coordination::Coordinator> c)
      : opt(o),
        host(h),
        on_role(std::move(fn)),
        coord(std::move(c)),
        root(fmt::format("/rdmarepl/{}/", o.group)),
        election(root + "leader"),
        history_path(o.dir + "/history.json") {}

  NodeOptions opt;
  NodeHost& host;
  RoleFn on_role;
  std::shared_ptr<coordination::Coordinator> coord;
  const std::string root, election, history_path;
  History history;

  std::atomic<coordination::LeaseId> lease{0};
  std::atomic<int64_t> deadline_ns{0};  // a leader acknowledges only before it
  std::atomic<NodeRole> role{NodeRole::none};
  std::atomic<uint64_t> epoch{0};
  mutable std::mutex info_mu;
  LeaderInfo leader_info;

  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopping = false;
  std::thread lease_thread, control_thread;
  int64_t last_wait_log_ns = 0;
  // Follower: watching the leader's session (watch_leader()).
  int64_t last_connected_ns = 0;
  bool seen_connected = false;
  bool suspecting = false;

  [[nodiscard]] size_t majority() const noexcept { return opt.members.size() / 2 + 1; }
  const Member* member(const std::string& id) const {
    for (const auto& m : opt.members)
      if (m.id == id) return &m;
    return nullptr;
  }
  bool sleep_for(std::chrono::milliseconds d) {
    std::unique_lock lk(stop_mu);
    return !stop_cv.wait_for(lk, d, [&] { return stopping; });
  }

  // ---------------------------------------------------------------- lease
  void lease_loop() {
    while (!stopped()) {
      if (lease.load() == 0) {
        const int64_t sent = now_ns();
        auto g = coord->grant_lease(opt.lease_ttl);
        if (g) {
          lease.store(g->first);
          set_deadline(sent, g->second);
        } else {
          log::warn("rdmarepl node {}: cannot get a lease from {}: {}; retrying", opt.id,
                    coord->describe(), g.error().message());
        }
      } else {
        const int64_t sent = now_ns();
        auto k = coord->keep_alive(lease.load());
        if (k) {
          set_deadline(sent, *k);
        } else if (k.error().is(Errc::not_found)) {
          log::warn("rdmarepl node {}: its lease expired ({}); a new one is requested", opt.id,
                    k.error().message());
          lease.store(0);
          continue;
        } else {
          log::warn(
              "rdmarepl node {}: renewing its lease failed: {}; a leader stops "
              "acknowledging writes {} ms after its last renewal",
              opt.id, k.error().message(), remaining_ms());
        }
      }
      if (!sleep_for(opt.lease_ttl / 4)) return;
    }
  }
  void set_deadline(int64_t sent_ns, std::chrono::milliseconds ttl) {
    const auto usable = static_cast<int64_t>(
        static_cast<double>(std::chrono::nanoseconds(ttl).count()) * (1.0 - opt.lease_margin));
    deadline_ns.store(sent_ns + usable);
  }
  int64_t remaining_ms() const { return (deadline_ns.load() - now_ns()) / 1'000'000; }
  bool stopped() {
    std::lock_guard lk(stop_mu);
    return stopping;
  }

  // ---------------------------------------------------------------- control
  void control_loop() {
    while (sleep_for(opt.poll_interval)) tick();
  }

  void tick() {
    const coordination::LeaseId my_lease = lease.load();
    auto l = coord->leader(election);
    if (!l) {
      if (role == NodeRole::leader && now_ns() >= deadline_ns.load())
        step_down(
            fmt::format("the coordinator is unreachable ({}) and its lease may have "
                        "expired",
                        l.error().message()));
      return;
    }
    if (role == NodeRole::leader) {
      if (l->epoch == epoch && l->lease == my_lease && my_lease != 0) {
        if (now_ns() >= deadline_ns.load())
          step_down("its lease was not renewed in time (writes are no longer acknowledged)");
        return;
      }
      step_down(l->held() ? fmt::format("epoch {} now leads", l->epoch)
                          : std::string("its leadership key is gone (lease expired)"));
    }
    if (my_lease == 0) return;
    if (l->held()) {
      if (role == NodeRole::follower && epoch == l->epoch) {
        watch_leader(*l);
        return;
      }
      follow(*l);
      return;
    }
    if (role != NodeRole::none) fence("the leader is gone");
    report_and_campaign(my_lease);
  }

  // A follower that lost its leader's session for suspect_after (lease_ttl before the
  // leader first connected) says so under suspects/<id>; once enough followers suspect
  // the leader that it cannot reach a majority, its lease is revoked: its key vanishes and
  // the group takes over now, not when etcd expires the lease. Safe for acknowledged writes
  // because a new leader still needs a majority of fenced reports (report_and_campaign()).
  void watch_leader(const coordination::Leader& l) {
    const auto mode = opt.channel.ack_mode;
    if (opt.suspect_after.count() == 0 ||
        (mode != replication::AckMode::quorum && mode != replication::AckMode::all))
      return;
    const int64_t now = now_ns();
    if (host.leader_connected()) {
      seen_connected = true;
      last_connected_ns = now;
      if (suspecting) {
        suspecting = false;
        (void)coord->put(root + "suspects/" + opt.id, json{{"epoch", 0}}.dump(), lease.load());
      }
      return;
    }
    const auto grace = std::chrono::nanoseconds(
        seen_connected ? opt.suspect_after : std::max(opt.suspect_after, opt.lease_ttl));
    if (now - last_connected_ns < grace.count()) return;
    if (!suspecting) {
      if (!coord->put(root + "suspects/" + opt.id, json{{"epoch", l.epoch}}.dump(), lease.load()))
        return;
      suspecting = true;
      log::warn("rdmarepl node {}: no session from leader {} of epoch {} for {} ms; suspects it",
                opt.id, leader().id, l.epoch, (now - last_connected_ns) / 1'000'000);
    }
    auto all = coord->list(root + "suspects/");
    if (!all) return;
    size_t suspects = 0;
    for (const auto& kv : *all) {
      json v = json::parse(kv.value, nullptr, false);
      if (!v.is_discarded() && v.value("epoch", uint64_t{0}) == l.epoch) ++suspects;
    }
    if (suspects < opt.members.size() - majority() + 1) return;
    log::warn(
        "rdmarepl node {}: {} followers have no session from leader {} of epoch {}: it "
        "cannot reach a majority; its lease is revoked so that the group takes over",
        opt.id, suspects, leader().id, l.epoch);
    (void)coord->revoke_lease(l.lease);
  }

  void step_down(const std::string& why) {
    log::warn("rdmarepl node {}: steps down as leader of epoch {}: {}", opt.id, epoch.load(), why);
    (void)coord->resign(election, epoch);
    fence("it stepped down");
  }

  // Stops serving any leadership. A member that led rebuilds its store from its log (the
  // store may hold writes the application applied but never replicated); then the channel
  // is a follower that accepts no leader, so that last_seq() is what the log holds.
  void fence(const std::string& why) {
    const NodeRole was = role.exchange(NodeRole::none);
    host.close_channel();
    if (history.was_leader) {
      if (auto st = host.reset_store(/*keep_log=*/true); !st)
        log::error("rdmarepl node {}: emptying its store failed: {}", opt.id, st.error().message());
      history.was_leader = false;
      save_history();
    }
    if (auto st = host.open_follower(kNobody); !st)
      log::error("rdmarepl node {}: reopening its log failed: {}", opt.id, st.error().message());
    if (was != NodeRole::none) {
      log::info("rdmarepl node {}: no longer {} of epoch {}: {}", opt.id, to_string(was),
                epoch.load(), why);
      set_leader({});
      on_role(NodeRole::none, epoch, LeaderInfo{});
    }
  }

  void report_and_campaign(coordination::LeaseId my_lease) {
    auto epochs = coord->list(root + "epochs/");
    if (!epochs) return;
    uint64_t last_epoch = 0;
    for (const auto& kv : *epochs) last_epoch = std::max(last_epoch, parse_epoch(kv.key));
    const uint64_t last = host.last_seq();
    const uint64_t tag = history.epoch_at(last);
    const json mine = {{"fenced", last_epoch}, {"last", last}, {"tag", tag}};
    if (!coord->put(root + "reports/" + opt.id, mine.dump(), my_lease)) return;
    auto reports = coord->list(root + "reports/");
    if (!reports) return;
    size_t fresh = 0;
    for (const auto& kv : *reports) {
      json r = json::parse(kv.value, nullptr, false);
      if (r.is_discarded() || r.value("fenced", uint64_t{0}) < last_epoch) continue;
      ++fresh;
      const auto theirs = std::make_pair(r.value("tag", uint64_t{0}), r.value("last", uint64_t{0}));
      if (theirs > std::make_pair(tag, last)) return;  // a more up-to-date member leads
    }
    if (fresh < majority()) {
      if (now_ns() - last_wait_log_ns > 5'000'000'000) {
        last_wait_log_ns = now_ns();
        log::info(
            "rdmarepl node {}: no leader; {} of {} members reported since epoch {}, a "
            "leader needs {}",
            opt.id, fresh, opt.members.size(), last_epoch, majority());
      }
      return;
    }
    const Member* me = member(opt.id);
    const json value = {{"id", opt.id}, {"host", me->endpoint.host}, {"port", me->endpoint.port}};
    auto won = coord->campaign(election, value.dump(), my_lease);
    if (!won || won->lease != my_lease || !won->held()) return;
    become_leader(won->epoch, last);
  }

  void become_leader(uint64_t e, uint64_t last) {
    host.close_channel();
    history.segments.emplace_back(e, last + 1);
    history.was_leader = true;
    save_history();
    json segs = json::array();
    for (const auto& [ep, first] : history.segments) segs.push_back({ep, first});
    const json info = {{"leader", opt.id}, {"segments", segs}};
    Status st = coord->put(epoch_key(root, e), info.dump(), 0);
    if (st) st = host.open_leader(e);
    if (!st) {
      log::error("rdmarepl node {}: won epoch {} but cannot lead: {}; resigning", opt.id, e,
                 st.error().message());
      epoch = e;
      step_down("it could not open its leader channel");
      return;
    }
    epoch = e;
    role = NodeRole::leader;
    const Member* me = member(opt.id);
    set_leader({e, opt.id, me->endpoint});
    log::info("rdmarepl node {}: leads epoch {} from seq {}", opt.id, e, last + 1);
    on_role(NodeRole::leader, e, leader());
  }

  void follow(const coordination::Leader& l) {
    auto kv = coord->get(epoch_key(root, l.epoch));
    if (!kv || !kv->has_value()) {
      if (role != NodeRole::none) fence(fmt::format("epoch {} took over", l.epoch));
      return;  // its leader has not published its history yet
    }
    json info = json::parse((*kv)->value, nullptr, false);
    History theirs;
    std::string leader_id;
    try {
      leader_id = info.at("leader").get<std::string>();
      for (const auto& s : info.at("segments"))
        theirs.segments.emplace_back(s.at(0).get<uint64_t>(), s.at(1).get<uint64_t>());
    } catch (const json::exception& e) {
      log::error(
          "rdmarepl node {}: epoch {}'s history in the coordinator is not valid ({}); "
          "not following it",
          opt.id, l.epoch, e.what());
      return;
    }
    const Member* m = member(leader_id);
    if (m == nullptr || leader_id == opt.id) return;
    fence(fmt::format("epoch {} took over", l.epoch));
    host.close_channel();
    const uint64_t last = host.last_seq();
    if (const uint64_t fork = last > 0 ? history.first_difference(theirs, last) : 0; fork != 0) {
      if (!rewind(fork, last, theirs.epoch_at(fork), leader_id)) return;
    }
    history = std::move(theirs);
    history.was_leader = false;
    save_history();
    if (auto st = host.open_follower(l.epoch); !st) {
      log::error("rdmarepl node {}: cannot follow epoch {}: {}", opt.id, l.epoch,
                 st.error().message());
      (void)host.open_follower(kNobody);
      return;
    }
    epoch = l.epoch;
    role = NodeRole::follower;
    last_connected_ns = now_ns();
    seen_connected = false;
    suspecting = false;
    set_leader({l.epoch, leader_id, m->endpoint});
    log::info("rdmarepl node {}: follows {} (epoch {}) from seq {}", opt.id, leader_id, l.epoch,
              host.last_seq());
    on_role(NodeRole::follower, l.epoch, leader());
  }

  // This member's records from `fork` to `last` were written by a leadership that the new
  // leader's history does not hold (a deposed leader's unacknowledged writes): they must go
  // before it applies anything new. Its log is cut back to fork - 1 and the store rebuilt
  // from it, so it resyncs only from the fork; when the cut would fall inside a logged
  // batch, store and log are emptied and it resyncs from nothing.
  bool rewind(uint64_t fork, uint64_t last, uint64_t theirs, const std::string& leader_id) {
    auto cut = rewind_log(opt.dir + "/wal", fork - 1);
    if (cut && *cut) {
      log::warn(
          "rdmarepl node {}: its seqs {}..{} were written by epoch {}, but in leader {}'s "
          "history epoch {} wrote seq {}: they diverged; its log is cut back to seq {} and it "
          "resyncs from there",
          opt.id, fork, last, history.epoch_at(fork), leader_id, theirs, fork, fork - 1);
      if (auto st = host.reset_store(/*keep_log=*/true); !st) {
        log::error("rdmarepl node {}: emptying its store failed: {}", opt.id, st.error().message());
        return false;
      }
      return true;
    }
    log::warn(
        "rdmarepl node {}: its seqs {}..{} diverged from leader {}'s history ({}); its store "
        "and log are emptied and it resyncs from nothing",
        opt.id, fork, last, leader_id,
        cut ? "the fork falls inside a logged batch" : cut.error().message());
    if (auto st = host.reset_store(/*keep_log=*/false); !st) {
      log::error("rdmarepl node {}: emptying its store failed: {}", opt.id, st.error().message());
      return false;
    }
    return true;
  }

  static uint64_t parse_epoch(const std::string& key) {
    const auto slash = key.rfind('/');
    try {
      return std::stoull(key.substr(slash + 1));
    } catch (...) {
      return 0;
    }
  }
  void save_history() {
    if (auto st = history.save(history_path); !st)
      log::error("rdmarepl node {}: {}", opt.id, st.error().message());
  }
  void set_leader(LeaderInfo li) {
    std::lock_guard g(info_mu);
    leader_info = std::move(li);
  }
  LeaderInfo leader() const {
    std::lock_guard g(info_mu);
    return leader_info;
  }
};

Result<std::unique_ptr<NodeControl>> NodeControl::create(const NodeOptions& options, NodeHost& host,
                                                         RoleFn on_role_change) {
  if (auto st = validate(options); !st) return std::move(st).error();
  std::shared_ptr<coordination::Coordinator> c = options.coordinator;
  if (c == nullptr) {
    auto e = coordination::make_etcd_coordinator(options.etcd);
    if (!e) return std::move(e).error();
    c = std::move(*e);
  }
  auto impl = std::make_unique<Impl>(options, host, std::move(on_role_change), std::move(c));
  auto h = History::load(impl->history_path);
  if (!h) return std::move(h).error();
  impl->history = std::move(*h);
  return std::unique_ptr<NodeControl>(new NodeControl(std::move(impl)));
}

NodeControl::NodeControl(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NodeControl::~NodeControl() {
  stop(false);
}

Status NodeControl::start() {
  Impl& i = *impl_;
  i.fence("starting");  // recovers the store from the log; accepts no leader yet
  i.lease_thread = std::thread([&i] { i.lease_loop(); });
  i.control_thread = std::thread([&i] { i.control_loop(); });
  return ok_status();
}

void NodeControl::stop(bool resign) noexcept {
  Impl& i = *impl_;
  {
    std::lock_guard lk(i.stop_mu);
    if (i.stopping) return;
    i.stopping = true;
  }
  i.stop_cv.notify_all();
  if (i.control_thread.joinable()) i.control_thread.join();
  if (i.lease_thread.joinable()) i.lease_thread.join();
  if (resign && i.role == NodeRole::leader) (void)i.coord->resign(i.election, i.epoch);
  if (resign && i.lease.load() != 0) (void)i.coord->revoke_lease(i.lease.load());
  i.role = NodeRole::none;
  i.host.close_channel();
}

NodeRole NodeControl::role() const noexcept {
  return impl_->role;
}
uint64_t NodeControl::epoch() const noexcept {
  return impl_->epoch;
}
LeaderInfo NodeControl::leader() const {
  return impl_->leader();
}

bool NodeControl::may_acknowledge(uint64_t epoch) const noexcept {
  return impl_->role == NodeRole::leader && impl_->epoch == epoch &&
         now_ns() < impl_->deadline_ns.load();
}

Error NodeControl::not_leader_error() const {
  const LeaderInfo l = leader();
  if (l.epoch == 0 || l.id == impl_->opt.id)
    return Error(Errc::not_leader,
                 fmt::format("node {} does not lead group {} and no leader is known yet; retry "
                             "shortly",
                             impl_->opt.id, impl_->opt.group));
  return Error(Errc::not_leader,
               fmt::format("node {} does not lead group {}: {} at {} leads (epoch {}); send "
                           "the write there",
                           impl_->opt.id, impl_->opt.group, l.id, l.endpoint.to_string(), l.epoch));
}

}  // namespace detail
}  // namespace rdmarepl::failover
