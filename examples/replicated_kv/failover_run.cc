#include "failover_run.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <thread>

#include "failover_group.h"
#include "flags.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/enum_text.h"

namespace rdmarepl::kvdemo {

namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// The group's client: writes the next writes to whoever leads, records every operation on
// the register keys (failover_register) and the reads of them, and injects the faults.
class Client {
 public:
  Client(Group& g, const FailoverConfig& c) : g_(g), c_(c) {}

  // Asks member `l` to write the next `count` writes; returns how many it acknowledged.
  Result<uint64_t> write(size_t l, uint64_t count) {
    RDMAREPL_TRY(g_.send(l, fmt::format("write first={} count={}", next_, count)));
    return written(l, count, mono_ns());
  }
  // Writes until `count` more were acknowledged, following the leader when it changes, and
  // reads the registers back every 4th request.
  Status stretch(uint64_t count, const Deadline& deadline) {
    const uint64_t target = next_ + count;
    auto l = g_.leader(deadline);
    if (!l) return std::move(l).error();
    for (uint64_t n = 0; next_ < target; ++n) {
      if (n % 4 == 3) RDMAREPL_TRY(read(*l));
      auto k = write(*l, std::min<uint64_t>(c_.chunk, target - next_));
      if (!k) return std::move(k).error();
      if (*k == 0) {
        if (deadline.expired()) return Error(Errc::timeout, "the run's --timeout passed");
        l = g_.leader(deadline);
        if (!l) return std::move(l).error();
      }
    }
    leader_ = *l;
    return read(leader_);
  }
  // Reads every register from member `l`; a read it could not confirm is not recorded.
  Status read(size_t l) {
    const uint64_t t0 = mono_ns();
    auto r = g_.ask(l, "read", "read ", 30s);
    if (!r) return std::move(r).error();
    const uint64_t t1 = mono_ns();
    if (field(*r, "ok") != "1") return ok_status();
    const std::string values = field(*r, "values");
    size_t pos = 0;
    for (uint32_t k = 0; k < kFailoverRegisters; ++k) {
      const size_t end = std::min(values.find(',', pos), values.size());
      HistoryOp op;
      op.key = failover_register_key(k);
      op.value = values.substr(pos, end - pos);
      op.found = op.value != "-";
      if (!op.found) op.value.clear();
      op.call_ns = t0;
      op.return_ns = t1;
      op.node = fmt::format("n{}", l);
      op.epoch = number(*r, "epoch", 0);
      history_.push_back(std::move(op));
      pos = end + 1;
    }
    ++reads_;
    return ok_status();
  }

  // One fault round; returns the time from the fault to the first write acknowledged after
  // it, in ms, and which member it hit.
  Result<std::pair<double, size_t>> fault(const Deadline& deadline) {
    switch (c_.fault) {
      case Fault::kill_leader:
        return kill(leader_, deadline);
      case Fault::kill_follower:  // each follower in turn
        return kill((leader_ + 1 + rounds_++ % (g_.size() - 1)) % g_.size(), deadline);
      case Fault::stop_leader:
        return stop_leader(deadline);
      case Fault::cut_etcd:
        return cut_etcd(deadline);
    }
    return Error(Errc::invalid_argument, "unknown fault");
  }

  [[nodiscard]] uint64_t acknowledged() const { return next_; }
  [[nodiscard]] size_t leader() const { return leader_; }
  [[nodiscard]] uint64_t stale_acknowledged() const { return stale_; }
  [[nodiscard]] uint64_t epoch_conflicts() const { return conflicts_; }
  [[nodiscard]] uint64_t reads() const { return reads_; }
  [[nodiscard]] const std::vector<HistoryOp>& history() const { return history_; }

 private:
  // Reads member `l`'s answer to a write request of `count` sent at `t0` and records it.
  Result<uint64_t> written(size_t l, uint64_t count, uint64_t t0) {
    auto r = g_.ask(l, {}, "acked ", 60s);
    if (!r) return std::move(r).error();
    const uint64_t t1 = mono_ns();
    const uint64_t k = number(*r, "count", 0), epoch = number(*r, "epoch", 0);
    std::string reg;
    for (uint64_t i = next_; i < next_ + count; ++i) {
      if (!failover_register(i, reg)) continue;
      HistoryOp op;
      op.write = true;
      op.key = reg;
      op.value = std::to_string(i);
      op.call_ns = t0;
      op.return_ns = i < next_ + k ? t1 : kNoReturn;
      op.node = fmt::format("n{}", l);
      op.epoch = i < next_ + k ? epoch : 0;
      history_.push_back(std::move(op));
    }
    if (k != 0) {
      auto [it, added] = acker_.try_emplace(epoch, l);
      if (!added && it->second != l) ++conflicts_;
    }
    next_ += k;
    return k;
  }
  // Writes one write at a time to whoever leads until one is acknowledged; ms since `t0`.
  Result<double> first_ack(uint64_t t0, const Deadline& deadline) {
    for (;;) {
      auto l = g_.leader(deadline);
      if (!l) return std::move(l).error();
      auto k = write(*l, 1);
      if (!k) return std::move(k).error();
      if (*k == 1) {
        leader_ = *l;
        return static_cast<double>(mono_ns() - t0) / 1e6;
      }
      if (deadline.expired()) return Error(Errc::timeout, "no leader acknowledged a write");
      std::this_thread::sleep_for(2ms);
    }
  }
  // Kill -9 of member `victim`. Under ack=all no write is acknowledged while a member is
  // down, so there it is restarted at once (its restart is part of the time).
  Result<std::pair<double, size_t>> kill(size_t victim, const Deadline& deadline) {
    g_.kill(victim);
    const uint64_t t0 = mono_ns();
    if (c_.ack == replication::AckMode::all) RDMAREPL_TRY(g_.start(victim));
    auto ms = first_ack(t0, deadline);
    if (!ms) return std::move(ms).error();
    return std::pair{*ms, victim};
  }
  // SIGSTOP of the leader until another member leads (and acknowledges, under quorum) and
  // for at least 2 lease TTLs; a write is queued to it meanwhile. Once it runs again it
  // must acknowledge none (its lease ran out) and rejoin as a follower.
  Result<std::pair<double, size_t>> stop_leader(const Deadline& deadline) {
    const size_t old = leader_;
    auto was = g_.role(old);
    if (!was) return std::move(was).error();
    g_.pause(old);
    const uint64_t t0 = mono_ns();
    double ms = -1;
    if (c_.ack == replication::AckMode::all) {
      auto l = g_.leader(deadline, was->epoch);  // elected; acknowledges once `old` is back
      if (!l) return std::move(l).error();
    } else {
      auto m = first_ack(t0, deadline);
      if (!m) return std::move(m).error();
      ms = *m;
    }
    const auto pause = std::chrono::nanoseconds(2 * c_.lease_ttl).count();
    const auto elapsed = static_cast<int64_t>(mono_ns() - t0);
    if (elapsed < pause) std::this_thread::sleep_for(std::chrono::nanoseconds(pause - elapsed));
    const uint64_t queued = mono_ns();
    RDMAREPL_TRY(g_.send(old, fmt::format("write first={} count=1", next_)));
    g_.resume(old);
    auto k = written(old, 1, queued);
    if (!k) return std::move(k).error();
    stale_ += *k;
    if (ms < 0) {
      auto m = first_ack(t0, deadline);
      if (!m) return std::move(m).error();
      ms = *m;
    }
    return std::pair{ms, old};
  }

  // The leader cut off from etcd (its requests time out) until another member leads with
  // a higher epoch (and, under quorum, acknowledges while the cut lasts); a write sent to
  // the old leader then must not be acknowledged: its local lease deadline has passed.
  // Then healed: it must rejoin as a follower (under all, the new leader acknowledges only
  // from then on).
  Result<std::pair<double, size_t>> cut_etcd(const Deadline& deadline) {
    const size_t old = leader_;
    auto was = g_.role(old);
    if (!was) return std::move(was).error();
    g_.cut_etcd(old);
    const uint64_t t0 = mono_ns();
    auto l = g_.leader(deadline, was->epoch);
    if (!l) return std::move(l).error();
    double ms = -1;
    if (c_.ack != replication::AckMode::all) {
      auto m = first_ack(t0, deadline);
      if (!m) return std::move(m).error();
      ms = *m;
    }
    const uint64_t sent = mono_ns();
    RDMAREPL_TRY(g_.send(old, fmt::format("write first={} count=1", next_)));
    auto k = written(old, 1, sent);
    if (!k) return std::move(k).error();
    stale_ += *k;
    g_.heal_etcd(old);
    if (ms < 0) {
      auto m = first_ack(t0, deadline);
      if (!m) return std::move(m).error();
      ms = *m;
    }
    return std::pair{ms, old};
  }

  Group& g_;
  const FailoverConfig& c_;
  uint64_t next_ = 0;  // writes 0..next_-1 were acknowledged (a prefix)
  size_t leader_ = 0;
  uint64_t stale_ = 0, conflicts_ = 0, reads_ = 0, rounds_ = 0;
  std::map<uint64_t, size_t> acker_;  // epoch -> the member that acknowledged in it
  std::vector<HistoryOp> history_;
};

// Waits until every member's digest and position agree.
Result<std::vector<std::pair<std::string, Digest>>> converge(Group& g, const Deadline& deadline,
                                                             bool& converged) {
  for (;;) {
    std::vector<std::pair<std::string, Digest>> out;
    std::string first_last;
    converged = true;
    for (size_t i = 0; i < g.size(); ++i) {
      auto r = g.ask(i, "digest", "digest ", 30s);
      if (!r) return std::move(r).error();
      Digest d;
      Digest::parse(field(*r, "value"), d);
      const std::string last = field(*r, "last");
      if (i == 0) first_last = last;
      converged = converged && last == first_last && (out.empty() || out.front().second == d);
      out.emplace_back(fmt::format("n{}", i), d);
    }
    if (converged || deadline.expired()) return out;
    std::this_thread::sleep_for(50ms);
  }
}

Status run(Group& g, const FailoverConfig& c, std::vector<ChildProcess>& etcd,
           FailoverResult& result) {
  const Deadline deadline = Deadline::after(c.timeout);
  Client client(g, c);
  RDMAREPL_TRY(client.stretch(c.writes_per_leader, deadline));
  for (uint32_t f = 0; f < c.failovers; ++f) {
    // A cluster loses the member every node asks first halfway through: the rounds from
    // then on elect through the other two.
    if (etcd.size() > 1 && f == c.failovers / 2) {
      etcd.front().kill_and_reap();
      result.etcd_member_killed = true;
      if (c.progress) fmt::print("  etcd member e0 killed (SIGKILL); 2 of 3 remain\n");
    }
    auto hit = client.fault(deadline);
    if (!hit) return std::move(hit).error();
    const auto [ms, victim] = *hit;
    result.failover_ms.push_back(ms);
    if (c.progress)
      fmt::print(
          "  round {}/{}: n{} hit ({}), n{} leads; first write acknowledged after {:.0f} ms\n",
          f + 1, c.failovers, victim, to_string(c.fault), client.leader(), ms);
    std::fflush(stdout);
    // With its old log: it must rejoin as a follower.
    if (!g.running(victim)) RDMAREPL_TRY(g.start(victim));
    RDMAREPL_TRY(g.wait_role(victim, "follower", Deadline::after(60s)));
    RDMAREPL_TRY(client.stretch(c.writes_per_leader, deadline));
  }
  result.acknowledged = client.acknowledged();
  result.stale_acknowledged = client.stale_acknowledged();
  result.epoch_conflicts = client.epoch_conflicts();
  result.reads = client.reads();
  auto digests = converge(g, Deadline::after(60s), result.converged);
  if (!digests) return std::move(digests).error();
  result.digests = std::move(*digests);
  auto check =
      g.ask(client.leader(), fmt::format("check count={}", result.acknowledged), "check ", 120s);
  if (!check) return std::move(check).error();
  result.lost = number(*check, "missing", UINT64_MAX);
  if (result.lost != 0 && c.progress)
    fmt::print("  LOST: {} acknowledged writes, the first is write {}\n", result.lost,
               field(*check, "first"));
  result.linearizability = check_linearizable(client.history());
  if (!c.history.empty()) RDMAREPL_TRY(write_porcupine_json(client.history(), c.history));
  result.verified = result.converged && result.lost == 0 && result.stale_acknowledged == 0 &&
                    result.epoch_conflicts == 0 && result.linearizability.linearizable;
  return ok_status();
}

}  // namespace

std::string failover_key(uint64_t index) {
  return fmt::format("f{:015}", index);
}

bool failover_register(uint64_t index, std::string& key) {
  if (index % 4 != 0) return false;
  key = failover_register_key(static_cast<uint32_t>(index / 4 % kFailoverRegisters));
  return true;
}

std::string failover_register_key(uint32_t r) {
  return fmt::format("r{}", r);
}

std::string failover_value(uint64_t index, uint32_t size) {
  std::string v = fmt::format("{}:", index);
  v.resize(std::max<size_t>(size, v.size()), static_cast<char>('a' + index % 26));
  return v;
}

Result<FailoverResult> run_failovers(const FailoverConfig& c) {
  if (c.members < 3)
    return Error(Errc::invalid_argument,
                 fmt::format("{} members: a group that survives its leader's loss needs at "
                             "least 3",
                             c.members));
  const bool temp = c.dir.empty();
  const fs::path root =
      temp ? fs::temp_directory_path() / fmt::format("rdmarepl-failover-{}", ::getpid())
           : fs::path(c.dir);
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root, ec);
  if (ec) return Error(Errc::io_error, "cannot create " + root.string() + ": " + ec.message());

  FailoverResult result;
  result.members = c.members;
  const uint64_t t0 = mono_ns();
  Status st = ok_status();
  {
    std::string url = c.etcd;
    std::vector<ChildProcess> etcd;
    if (url.empty()) {
      auto e = start_etcd(root, c.etcd_members, url);
      if (!e) return std::move(e).error();
      etcd = std::move(*e);
    }
    Group g(c, root, url);
    st = g.init();
    if (st) st = run(g, c, etcd, result);
    g.quit();
  }
  result.seconds = static_cast<double>(mono_ns() - t0) / 1e9;
  if (temp) fs::remove_all(root, ec);
  if (!st) return std::move(st).error();
  return result;
}

}  // namespace rdmarepl::kvdemo
