#include "live_cluster.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

#include "control_socket.h"
#include "flags.h"
#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/enum_text.h"

namespace rdmarepl::bench {

using namespace std::chrono_literals;
using kvdemo::ChildProcess;

namespace {

Result<std::string> expect_line(ChildProcess& child, std::string_view prefix,
                                std::chrono::milliseconds timeout) {
  auto line = child.control().read_line(timeout);
  if (!line) return Error(line.error().code(), child.name() + ": " + line.error().message());
  if (line->rfind(prefix, 0) != 0)
    return Error(Errc::io_error,
                 fmt::format("{} sent '{}', expected '{}...'", child.name(), *line, prefix));
  return line;
}

}  // namespace

Result<std::unique_ptr<LiveCluster>> LiveCluster::start(const kvdemo::RunConfig& config,
                                                        replication::ChannelOptions leader) {
  std::unique_ptr<LiveCluster> c(new LiveCluster());
  RDMAREPL_TRY(kvdemo::empty_wal_dirs(config));
  for (uint32_t i = 0; i < config.followers; ++i) {
    auto args = kvdemo::to_args(config);
    args.insert(args.begin(), {"--role", "follower", "--id", std::to_string(i), "--port", "0"});
    auto child = ChildProcess::spawn("follower-" + std::to_string(i + 1), args);
    if (!child) return std::move(child).error();
    auto line = expect_line(*child, "ready ", 30s);
    if (!line) return std::move(line).error();
    auto port = kvdemo::parse_count(kvdemo::field(*line, "port"), "port");
    if (!port || *port == 0 || *port > 65535)
      return Error(Errc::protocol_error, child->name() + " reported no port: " + *line);
    leader.peers.push_back({"127.0.0.1", static_cast<uint16_t>(*port)});
    c->followers_.push_back(std::move(*child));
  }
  leader.role = replication::Role::leader;
  leader.node_id = "leader";
  auto ch = Channel::create(leader, c->store_);
  if (!ch) return std::move(ch).error();
  c->channel_ = std::move(ch).value();
  c->t0_ns_ = c->last_ns_ = mono_ns();
  c->last_ = c->channel_->metrics();
  c->pacer_ = std::thread([p = c.get()] { p->pace(); });
  return c;
}

LiveCluster::~LiveCluster() {
  stop_.store(true);
  if (pacer_.joinable()) pacer_.join();
  if (channel_) channel_->close();
  for (auto& f : followers_) (void)f.control().send_line("quit");
}

void LiveCluster::set_workload(const LiveWorkload& w) {
  std::lock_guard lock(wl_mu_);
  workload_ = w;
  workload_version_.fetch_add(1);
}

std::vector<pid_t> LiveCluster::follower_pids() const {
  std::vector<pid_t> out;
  for (const auto& f : followers_) out.push_back(f.pid());
  return out;
}

double LiveCluster::elapsed_s() const {
  return static_cast<double>(mono_ns() - t0_ns_) / 1e9;
}

namespace {

double ticks_s(uint64_t ticks) {
  static const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return static_cast<double>(ticks) / hz;
}

// user + nice + system of every CPU (the first line of /proc/stat), seconds; -1 if unknown.
double machine_busy_s() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  uint64_t user = 0, nice = 0, system = 0;
  if (!(in >> cpu >> user >> nice >> system) || cpu != "cpu") return -1;
  return ticks_s(user + nice + system);
}

// utime + stime of process `pid` (fields 14 and 15 of /proc/<pid>/stat), seconds; -1 if
// unknown.
double process_cpu_s(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 13; ++i) rest >> field;  // state .. cmajflt
  if (!(rest >> utime >> stime)) return -1;
  return ticks_s(utime + stime);
}

}  // namespace

double LiveCluster::own_cpu_s() const {
  double total = process_cpu_s("self");
  for (const auto& f : followers_) {
    const double t = process_cpu_s(std::to_string(f.pid()));
    if (t < 0 || total < 0) return -1;
    total += t;
  }
  return total;
}

void LiveCluster::pace() noexcept {
  std::mt19937_64 rng(42);
  LiveWorkload w;
  uint64_t version = ~uint64_t{0};
  std::string key, value;
  double interval_ns = 0;
  uint64_t due = mono_ns();
  while (!stop_.load(std::memory_order_relaxed)) {
    if (const uint64_t v = workload_version_.load(); v != version) {
      std::lock_guard lock(wl_mu_);
      w = workload_;
      version = v;
      const double rec = w.key_size + (w.value_min + w.value_max) / 2.0;
      interval_ns = w.offered_mb_s > 0 ? rec * 1e3 / w.offered_mb_s : 1e9;
      value.assign(w.value_max, 'v');
      due = mono_ns();
    }
    const uint64_t now = mono_ns();
    if (now < due) {
      if (due - now > 200'000)
        std::this_thread::sleep_for(std::chrono::nanoseconds(due - now - 100'000));
      else
        std::this_thread::yield();
      continue;
    }
    // Open loop, but a writer that fell behind (the channel could not take the offered
    // load) catches up at most 20 ms worth of writes in a burst.
    if (now - due > 20'000'000) due = now - 20'000'000;
    const uint64_t k = rng() % w.keyspace;
    key = fmt::format("{:0{}}", k, w.key_size);
    const uint32_t len =
        w.value_min + static_cast<uint32_t>(rng() % (uint64_t{w.value_max} - w.value_min + 1));
    value[0] = static_cast<char>('a' + rng() % 26);
    const std::string_view v(value.data(), len);
    if (channel_->replicate(key, v).ok())
      store_.put(key, v);
    else
      write_failures_.fetch_add(1);
    due += static_cast<uint64_t>(interval_ns);
  }
}

LiveWindow LiveCluster::measure(std::chrono::milliseconds d) {
  std::this_thread::sleep_for(d);
  LiveWindow w;
  w.knobs = channel_->knobs();
  w.obs = channel_->observe();
  const auto m = channel_->metrics();
  const uint64_t now = mono_ns();
  w.t_end_s = static_cast<double>(now - t0_ns_) / 1e9;
  for (size_t i = 0; i < w.latency_ns.buckets.size(); ++i)
    w.latency_ns.buckets[i] = m.ack_latency_ns.buckets[i] - last_.ack_latency_ns.buckets[i];
  w.latency_ns.count = m.ack_latency_ns.count - last_.ack_latency_ns.count;
  w.latency_ns.sum = m.ack_latency_ns.sum - last_.ack_latency_ns.sum;
  w.latency_ns.max = m.ack_latency_ns.max;
  w.records = m.records_replicated - last_.records_replicated;
  w.bytes = m.bytes_replicated - last_.bytes_replicated;
  last_ = m;
  const uint64_t t_prev_ns = last_ns_;
  last_ns_ = now;
  const double machine = machine_busy_s(), own = own_cpu_s();
  if (machine >= 0 && own >= 0 && last_machine_s_ >= 0 && last_own_s_ >= 0)
    w.foreign_cpus = std::max(0.0, (machine - last_machine_s_) - (own - last_own_s_)) /
                     (static_cast<double>(now - t_prev_ns) / 1e9);
  last_machine_s_ = machine;
  last_own_s_ = own;
  return w;
}

Result<bool> LiveCluster::finish(std::chrono::seconds timeout) {
  stop_.store(true);
  if (pacer_.joinable()) pacer_.join();
  if (write_failures_.load() != 0)
    return Error(Errc::io_error,
                 fmt::format("{} writes failed (stalled or refused)", write_failures_.load()));
  RDMAREPL_TRY(channel_->wait_all_acked(timeout));
  const auto want = store_.digest();
  bool same = true;
  for (auto& f : followers_) {
    RDMAREPL_TRY(f.control().send_line("digest"));
    auto line = expect_line(f, "digest ", 120s);
    if (!line) return std::move(line).error();
    kvdemo::Digest d;
    if (!kvdemo::Digest::parse(kvdemo::field(*line, "value"), d) || !(d == want)) same = false;
  }
  return same;
}

std::vector<tuning::Knobs> static_grid(const tuning::Knobs& base) {
  std::vector<tuning::Knobs> out;
  for (uint64_t batch : {16u << 10, 64u << 10, 256u << 10})
    for (uint32_t delay : {50u, 500u})
      for (auto mode : {tuning::PollingMode::busy, tuning::PollingMode::blocking}) {
        tuning::Knobs k = base;
        k.batch_bytes = batch;
        k.flush_delay_us = delay;
        k.poll_mode = mode;
        k.poll_interval_us = mode == tuning::PollingMode::blocking ? 1000 : base.poll_interval_us;
        out.push_back(k);
      }
  return out;
}

tuning::KnobBounds live_bounds(uint32_t shards, uint64_t retain_bytes) {
  tuning::KnobBounds b;
  b.batch_bytes = {4 << 10, 1 << 20, 4 << 10};
  b.flush_delay_us = {0, 2000, 5};
  b.shards = {1, shards, 1};
  b.poll_interval_us = {1, 1000, 1};
  b.pool_bytes = {8ull << 20, uint64_t{shards} * retain_bytes, 1ull << 20};
  return b;
}

Result<kvdemo::RunConfig> live_config(const LiveArgs& args) {
  kvdemo::RunConfig c;
  c.shards = 2;
  c.retain_bytes = 16u << 20;
  c.polling = replication::PollingMode::blocking;
  c.leader_polling = replication::PollingMode::sleep;
  c.digest_only_store = true;
  c.workload.value_min = 64;
  c.workload.value_max = 16384;
  c.transport = args.transport;
  c.ack = args.ack;
  c.wal_dir = args.wal_dir;
  c.durability = args.durability;
  if (args.followers < 1 || args.followers > replication::kMaxFollowers)
    return Error(Errc::invalid_argument, fmt::format("--followers {} is out of range; use 1..{}",
                                                     args.followers, replication::kMaxFollowers));
  c.followers = args.followers;
  return c;
}

replication::ChannelOptions live_leader_options(const kvdemo::RunConfig& config) {
  auto o = kvdemo::leader_options(config, {});
  o.polling = replication::PollingMode::sleep;
  return o;
}

}  // namespace rdmarepl::bench
