#include "transport/bootstrap/admission.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>

#include "rdmarepl/core/log.h"

namespace rdmarepl::transport::bootstrap {
namespace {

// A thread polls in slices this long at most, so that others waiting for the lock see new
// connections and expiries soon.
constexpr auto kPollSlice = std::chrono::milliseconds(20);
// Addresses not seen for this long are forgotten (with their failures).
constexpr auto kForgetAfter = std::chrono::minutes(10);

void count(std::atomic<uint64_t>* c) noexcept {
  if (c != nullptr) c->fetch_add(1, std::memory_order_relaxed);
}

std::string host_of(const std::string& address) {
  const auto colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

uint32_t per_address_limit(const ConnectionOptions& o) {
  return std::max<uint32_t>(1, o.max_handshakes / 4);
}

// The kind of a failed handshake for rate-limiting its log lines: its outcome and its
// reason without the numbers in it (ports, counts, byte values), so that the same failure
// repeated is one kind, and another reason from the same address is another.
std::string reason_kind(std::string_view prefix, std::string_view why) {
  static constexpr size_t kMaxKindBytes = 96;
  std::string kind(prefix);
  kind += ':';
  for (const char c : why) {
    if (kind.size() >= kMaxKindBytes) break;
    if (c < '0' || c > '9') kind += c;
  }
  return kind;
}

std::string_view outcome_name(Admission::Outcome outcome) noexcept {
  switch (outcome) {
    case Admission::Outcome::ok:
      return "ok";
    case Admission::Outcome::timeout:
      return "timeout";
    case Admission::Outcome::failed:
      return "failed";
    case Admission::Outcome::declined:
      return "declined";
  }
  return "?";
}

int64_t ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
}

}  // namespace

Admission::~Admission() = default;

Result<Admitted> Admission::next(const ConnectionOptions& o, Deadline wait) {
  std::vector<pollfd> fds;
  std::vector<Watched> watched;  // fds[0] is the arrivals' descriptor
  std::vector<std::unique_ptr<Pending>> closing;
  for (;;) {
    Duration slice{};
    {
      std::unique_lock lock(mu_);
      expire(o);
      accept_all(lock, o);
      fds.assign(1, pollfd{arrivals_->fd(), POLLIN, 0});
      watched.clear();
      slice = std::min<Duration>(wait.remaining(), kPollSlice);
      const auto now = Clock::now();
      for (const Held& h : held_) {
        // One handshake at a time per address, and none before a paced address's time:
        // the others wait here, unpolled (woken in time for that).
        const Record& r = peers_[h.host];
        if (!may_start(r, now)) {
          if (r.running == 0)
            slice =
                std::max<Duration>(Duration::zero(), std::min<Duration>(slice, r.not_before - now));
          continue;
        }
        const size_t first = fds.size();
        h.conn->watch(fds);
        watched.push_back(Watched{h.id, first, fds.size() - first});
        slice = std::max<Duration>(Duration::zero(),
                                   std::min<Duration>(slice, h.arrived + o.connect_timeout - now));
      }
      closing.swap(closing_);
    }
    closing.clear();  // closed without the lock
    flush_log();
    // Polled without the lock: other threads accept, expire and finish meanwhile.
    const int ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(slice).count());
    const int rc = ::poll(fds.data(), fds.size(), ms);
    if (rc < 0 && errno != EINTR) {
      Error e = errno_error(errno, "poll() on a listener");
      warn("poll", "", e.message());
      return e;
    }
    std::lock_guard lock(mu_);
    for (const Watched& w : watched) {
      if (rc <= 0) break;
      const std::span<const pollfd> polled(fds.data() + w.first, w.count);
      if (std::none_of(polled.begin(), polled.end(), [](const pollfd& p) { return p.revents; }))
        continue;
      // Unless another thread took or closed the connection meanwhile, ask it whether its
      // peer spoke (or left: the handshake then reports it).
      auto it =
          std::find_if(held_.begin(), held_.end(), [&](const Held& h) { return h.id == w.id; });
      if (it == held_.end() || !may_start(peers_[it->host], Clock::now()) ||
          !it->conn->spoke(polled))
        continue;
      Held h = std::move(*it);
      held_.erase(it);
      ++peers_[h.host].running;
      return Admitted{std::move(h.conn), std::move(h.host),
                      Deadline::after(h.arrived + o.connect_timeout - Clock::now())};
    }
    if (wait.expired()) return Error(Errc::timeout, "no peer connected");
  }
}

void Admission::accept_all(std::unique_lock<std::mutex>& lock, const ConnectionOptions& o) {
  for (;;) {
    Arrivals::Arrival a = arrivals_->next();
    if (!a.conn) return;  // nothing more has arrived
    std::string host = host_of(a.address);
    const std::string why = refusal(host, o);
    if (!why.empty()) {
      warn("refused", host,
           fmt::format("closed the connection from {} at once: {}", a.address, why));
      count(o.counters.refused);
      continue;  // a.conn closes here
    }
    if (in_flight_ >= o.max_handshakes / 2 && peers_[host].in_flight >= per_address_limit(o)) {
      // At its share: its oldest held connection makes room (refusal() made sure it has one).
      const auto it =
          std::find_if(held_.begin(), held_.end(), [&](const Held& h) { return h.host == host; });
      evict(static_cast<size_t>(it - held_.begin()), o);
    } else if (in_flight_ >= o.max_handshakes) {
      evict(0, o);
    }
    Record& r = peers_[host];
    ++r.in_flight;  // its place is taken while it is readied (refusal() counts it)
    r.last_seen = Clock::now();
    ++in_flight_;
    const auto arrived = Clock::now();
    lock.unlock();
    Status readied = a.conn->hold(o);
    if (!readied.ok()) a.conn.reset();  // closed without the lock
    lock.lock();
    Held h{std::move(a.conn), std::move(host), std::move(a.address), arrived, ++next_id_};
    if (!readied.ok()) {
      warn(reason_kind("not readied", readied.error().message()), h.host,
           fmt::format("closed the connection from {}: {}", h.address, readied.error().message()));
      count(o.counters.refused);
      fail(peers_[h.host]);  // readying it cost work (an RDMA CM queue pair)
      drop(h);
      continue;
    }
    held_.push_back(std::move(h));
  }
}

std::string Admission::refusal(const std::string& host, const ConnectionOptions& o) {
  if (peers_.size() >= kMaxTrackedAddresses) forget_idle();
  const Record& r = peers_[host];
  // Full, with every connection in a running handshake (none silent to make room for it).
  if (in_flight_ >= o.max_handshakes && held_.empty())
    return fmt::format("{} connections are in their handshake (max_handshakes)", in_flight_);
  // Under pressure (half of max_handshakes in use) one address gets no more than a quarter;
  // below that a burst from one host (many clients starting at once) is admitted. At its
  // share, a new connection replaces the address's oldest held one; only when none of its
  // connections is held (all being readied or in their handshake) is the new one refused.
  if (in_flight_ >= o.max_handshakes / 2 && r.in_flight >= per_address_limit(o) &&
      std::none_of(held_.begin(), held_.end(), [&](const Held& h) { return h.host == host; }))
    return fmt::format(
        "{} of the {} connections in their handshake are from that address (at "
        "most {}, a quarter of max_handshakes, once half of it is in use)",
        r.in_flight, in_flight_, per_address_limit(o));
  return {};
}

void Admission::expire(const ConnectionOptions& o) {
  const auto now = Clock::now();
  for (size_t i = 0; i < held_.size();) {
    Held& h = held_[i];
    if (now < h.arrived + o.connect_timeout) {
      ++i;
      continue;
    }
    warn("silent", h.host,
         fmt::format("handshake with {} timed out: it sent nothing in {} ms (connect_timeout); "
                     "closing it",
                     h.address, ms_between(h.arrived, now)));
    count(o.counters.timeouts);
    drop(h);
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void Admission::evict(size_t i, const ConnectionOptions& o) {
  // A held connection whose peer has said nothing (or waits its turn): a real peer speaks
  // at once and is handed over within milliseconds.
  Held& h = held_[i];
  warn("evicted", h.host,
       fmt::format("closed the connection from {}: it sent nothing in {} ms and {} connections "
                   "are in their handshake ({}); a newer one takes its place",
                   h.address, ms_between(h.arrived, Clock::now()), in_flight_,
                   in_flight_ >= o.max_handshakes ? "max_handshakes"
                                                  : "its address's share of max_handshakes"));
  count(o.counters.refused);
  drop(h);
  held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i));
}

void Admission::drop(Held& h) {
  Record& r = peers_[h.host];
  --r.in_flight;
  --in_flight_;
  r.last_seen = Clock::now();
  if (h.conn) closing_.push_back(std::move(h.conn));
}

void Admission::finished(const std::string& host, Outcome outcome, const ConnectionOptions& o,
                         std::string_view why) {
  std::lock_guard lock(mu_);
  Record& r = peers_[host];
  --r.running;
  --r.in_flight;
  --in_flight_;
  r.last_seen = Clock::now();
  if (outcome == Outcome::ok) {
    r.failures = 0;
    r.not_before = {};
    return;
  }
  count(outcome == Outcome::timeout ? o.counters.timeouts : o.counters.refused);
  warn(reason_kind(outcome_name(outcome), why), host, fmt::format("refused a connection: {}", why));
  if (outcome != Outcome::declined) fail(r);
}

ConnectionOptions declining(const ConnectionOptions& o, bool& declined) {
  ConnectionOptions copy = o;
  if (o.check_peer)
    copy.check_peer = [&check = o.check_peer, &declined](std::string_view node,
                                                         std::string_view address,
                                                         std::string_view app_data) {
      Status st = check(node, address, app_data);
      if (!st.ok()) declined = true;
      return st;
    };
  return copy;
}

void Admission::fail(Record& r) {
  ++r.failures;
  if (r.failures >= kFailuresBeforePacing)
    r.not_before = Clock::now() + std::chrono::duration_cast<Clock::duration>(kFailedPace);
}

void Admission::warn(std::string_view kind, const std::string& host, const std::string& line) {
  uint64_t held_back = 0;
  if (!log_limiter_.admit(fmt::format("{}|{}", kind, host), held_back)) return;
  log::warn("rdmarepl listener {}: {}{}", local_, line,
            held_back_note(held_back, log_limiter_.interval()));
}

void Admission::flush_log() {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(log_limiter_.interval()).count();
  for (const auto& [key, n] : log_limiter_.flush()) {
    const auto bar = key.rfind('|');
    if (bar == std::string::npos) {
      log::warn(
          "rdmarepl listener {}: {} more lines about connections from other addresses "
          "held back in the last {} ms (too many addresses at once)",
          local_, n, ms);
    } else {
      const std::string host = key.substr(bar + 1);
      const std::string kind = key.substr(0, std::min(key.find(':'), bar));
      log::warn("rdmarepl listener {}: {} more lines about {} ({}) held back in the last {} ms",
                local_, n, host.empty() ? "this listener" : "connections from " + host, kind, ms);
    }
  }
}

void Admission::forget_idle() {
  const auto now = Clock::now();
  std::erase_if(peers_, [&](const auto& kv) {
    const Record& r = kv.second;
    return r.in_flight == 0 && now - r.last_seen > kForgetAfter;
  });
  if (peers_.size() < kMaxTrackedAddresses) return;
  // Still full: forget the addresses with nothing in flight and no pacing running.
  std::erase_if(peers_, [&](const auto& kv) {
    return kv.second.in_flight == 0 && kv.second.not_before <= now;
  });
}

}  // namespace rdmarepl::transport::bootstrap
