// Crash test: a leader and two followers (crash_node processes) over TCP, ack_mode=all,
// durability=batch, the leader writing at a steady rate. 20 times a randomly chosen node
// (the leader included) is killed with SIGKILL at a random moment and started again over
// its write-ahead log. The leader prints each committed write; this process keeps them.
// At the end every acknowledged write must be on all three nodes and their digests equal.
//
// Seeded: RDMAREPL_CRASH_SEED=<n> repeats a run (the seed is printed). Kills: 20, or
// RDMAREPL_CRASH_KILLS.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

namespace {

// What the harness knows for sure: the ids the leader reported as committed.
struct Acks {
  std::mutex mu;
  std::condition_variable cv;
  std::set<uint64_t> ids;
  uint64_t lines = 0;

  void add(uint64_t id) {
    {
      std::lock_guard lock(mu);
      ids.insert(id);
      ++lines;
    }
    cv.notify_all();
  }
  uint64_t count() {
    std::lock_guard lock(mu);
    return lines;
  }
  // Waits until at least `n` ACK lines were seen.
  bool wait_for(uint64_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, [&] { return lines >= n; });
  }
};

class Node {
 public:
  Node(std::string name, Acks* acks) : name_(std::move(name)), acks_(acks) {}
  ~Node() { kill9(); }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  void start(const std::vector<std::string>& args) {
    int in[2], out[2];
    REQUIRE(::pipe(in) == 0);
    REQUIRE(::pipe(out) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::close(in[0]);
      ::close(in[1]);
      ::close(out[0]);
      ::close(out[1]);
      std::vector<char*> argv{const_cast<char*>(CRASH_NODE_PATH)};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(CRASH_NODE_PATH, argv.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
    {
      std::lock_guard lock(mu_);
      lines_.clear();
      eof_ = false;
    }
    reader_ = std::thread([this, fd = from_] { read_loop(fd); });
    auto ready = expect("READY ", 60s);
    INFO(name_ << " did not start");
    REQUIRE(ready.has_value());
    port_ = static_cast<uint16_t>(std::stoul(ready->substr(6)));
  }

  void kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    ::close(to_);
    if (reader_.joinable()) reader_.join();
    ::close(from_);
  }

  void send(const std::string& cmd) {
    const std::string line = cmd + "\n";
    REQUIRE(::write(to_, line.data(), line.size()) == static_cast<ssize_t>(line.size()));
  }

  // The next line (other than ACK lines) starting with `prefix`.
  std::optional<std::string> expect(const std::string& prefix, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      while (!lines_.empty()) {
        std::string l = std::move(lines_.front());
        lines_.pop_front();
        if (l.rfind(prefix, 0) == 0) return l;
      }
      if (eof_) return std::nullopt;
      if (cv_.wait_until(lock, until) == std::cv_status::timeout && lines_.empty())
        return std::nullopt;
    }
  }

  [[nodiscard]] uint16_t port() const { return port_; }
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  void read_loop(int fd) {
    std::string buf;
    char chunk[4096];
    for (;;) {
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) break;
      buf.append(chunk, static_cast<size_t>(n));
      size_t nl;
      while ((nl = buf.find('\n')) != std::string::npos) {
        std::string line = buf.substr(0, nl);
        buf.erase(0, nl + 1);
        // Only whole lines count: a write cut by the kill never ends in a newline.
        if (line.rfind("ACK ", 0) == 0) {
          acks_->add(std::stoull(line.substr(4)));
          continue;
        }
        std::lock_guard lock(mu_);
        lines_.push_back(std::move(line));
        cv_.notify_all();
      }
    }
    std::lock_guard lock(mu_);
    eof_ = true;
    cv_.notify_all();
  }

  std::string name_;
  Acks* acks_;
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  uint16_t port_ = 0;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_;
  bool eof_ = false;
};

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace

TEST_CASE("crash: kill -9 any node 20 times under load, no acknowledged write is lost", "[crash]") {
  const uint64_t seed = env_or("RDMAREPL_CRASH_SEED", std::random_device{}());
  const uint64_t kills = env_or("RDMAREPL_CRASH_KILLS", 20);
  std::printf("crash test: seed %llu (repeat with RDMAREPL_CRASH_SEED=%llu)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  std::mt19937_64 rng(seed);

  std::string root = (std::filesystem::temp_directory_path() / "rdmarepl-crash-XXXXXX").string();
  REQUIRE(::mkdtemp(root.data()) != nullptr);
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{root};

  Acks acks;
  Node f1("follower 1", &acks), f2("follower 2", &acks), leader("leader", &acks);
  f1.start({"follower", "--port", "0", "--wal", root + "/f1"});
  f2.start({"follower", "--port", "0", "--wal", root + "/f2"});
  const std::string peers = std::to_string(f1.port()) + "," + std::to_string(f2.port());
  uint64_t incarnation = 0;
  auto start_leader = [&] {
    // Each leader incarnation writes its own ids, so an id names one write forever.
    leader.start({"leader", "--peers", peers, "--wal", root + "/leader", "--base",
                  std::to_string(incarnation++ << 32)});
  };
  auto restart = [&](Node& n) {
    if (&n == &leader)
      start_leader();
    else
      n.start({"follower", "--port", std::to_string(n.port()), "--wal",
               root + (&n == &f1 ? "/f1" : "/f2")});
  };
  start_leader();
  REQUIRE(acks.wait_for(50, 60s));

  Node* nodes[] = {&leader, &f1, &f2};
  uint64_t killed[3] = {0, 0, 0};
  for (uint64_t k = 0; k < kills; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 400));
    const size_t v = rng() % 3;
    Node& victim = *nodes[v];
    ++killed[v];
    const uint64_t before = acks.count();
    victim.kill9();
    restart(victim);
    // The cluster must make progress again: all three back, caught up, committing.
    INFO("kill " << k + 1 << " (" << victim.name() << "): no new acknowledged writes");
    REQUIRE(acks.wait_for(before + 20, 60s));
  }

  leader.send("stop");
  auto q = leader.expect("QUIESCE", 90s);
  REQUIRE(q.has_value());
  INFO(*q);
  REQUIRE(*q == "QUIESCED");

  std::vector<uint64_t> ids;
  {
    std::lock_guard lock(acks.mu);
    ids.assign(acks.ids.begin(), acks.ids.end());
  }
  const std::string list = root + "/acknowledged.txt";
  {
    std::ofstream out(list);
    for (auto id : ids) out << id << '\n';
  }
  std::vector<uint64_t> present;
  std::vector<std::string> digests;
  for (Node* n : nodes) {
    n->send("check " + list);
    auto p = n->expect("PRESENT ", 60s);
    REQUIRE(p.has_value());
    unsigned long long count = 0;
    char missing[64] = {};
    REQUIRE(std::sscanf(p->c_str(), "PRESENT %llu %63s", &count, missing) == 2);
    INFO(n->name() << ": first missing acknowledged id " << missing);
    CHECK(count == ids.size());
    present.push_back(count);
    n->send("digest");
    auto d = n->expect("DIGEST ", 60s);
    REQUIRE(d.has_value());
    digests.push_back(d->substr(7));
  }
  const uint64_t lost = ids.size() - std::min({present[0], present[1], present[2]});
  std::printf(
      "crash test: seed %llu, %llu kills (leader %llu, follower 1 %llu, follower 2 %llu); "
      "acknowledged %zu, present %llu/%llu/%llu (leader/f1/f2), lost %llu; digests %s %s %s\n",
      static_cast<unsigned long long>(seed), static_cast<unsigned long long>(kills),
      static_cast<unsigned long long>(killed[0]), static_cast<unsigned long long>(killed[1]),
      static_cast<unsigned long long>(killed[2]), ids.size(),
      static_cast<unsigned long long>(present[0]), static_cast<unsigned long long>(present[1]),
      static_cast<unsigned long long>(present[2]), static_cast<unsigned long long>(lost),
      digests[0].c_str(), digests[1].c_str(), digests[2].c_str());
  std::fflush(stdout);
  CHECK(lost == 0);
  CHECK(digests[0] == digests[1]);
  CHECK(digests[0] == digests[2]);
  for (Node* n : nodes) n->send("quit");
}
