// The shortest complete program that embeds rdmarepl in a store: a leader channel and a
// follower channel in one process (two stores), over TCP on loopback (or verbs when an RDMA
// device is present). The leader's writes reach the follower's store through Store::apply.
#include <rdmarepl/rdmarepl.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

// Any store works: it only needs apply(const rdmarepl::Record&).
struct MapStore {
  std::map<std::string, std::string> data;
  void apply(const rdmarepl::Record& r) {
    if (r.op == rdmarepl::Op::put) {
      data[std::string(r.key)] = std::string(r.value);
    } else {
      data.erase(std::string(r.key));
    }
  }
};

static int fail(const rdmarepl::Error& e) {
  std::fprintf(stderr, "embed_minimal: %s\n", e.to_string().c_str());
  return 1;
}

int main() {
  using namespace std::chrono_literals;
  MapStore leader_store, follower_store;

  rdmarepl::ChannelOptions fo;
  fo.role = rdmarepl::Role::follower;
  fo.listen = {"127.0.0.1", 0};  // port 0: any free port
  auto follower = rdmarepl::ReplicationChannel<MapStore>::create(fo, follower_store);
  if (!follower) return fail(follower.error());

  rdmarepl::ChannelOptions lo;
  lo.role = rdmarepl::Role::leader;
  lo.peers = {(*follower)->local_endpoint()};
  lo.ack_mode = rdmarepl::AckMode::all;  // wait() returns once every follower applied it
  auto leader = rdmarepl::ReplicationChannel<MapStore>::create(lo, leader_store);
  if (!leader) return fail(leader.error());

  // The store applies each write locally, then hands it to the channel (no copy is kept).
  for (int i = 0; i < 1000; ++i) {
    std::string key = "user:" + std::to_string(i), value = "v" + std::to_string(i * i);
    leader_store.data[key] = value;
    rdmarepl::WriteResult w = (*leader)->replicate(key, value);
    if (!w.ok())
      return fail({rdmarepl::Errc::io_error, "replicate: " + std::string(describe(w.status))});
  }
  (*leader)->flush();
  if (auto s = (*leader)->wait_all_acked(5s); !s) return fail(s.error());

  (*leader)->close();
  (*follower)->close();  // stops the follower's poller: its store is stable from here
  bool same = follower_store.data == leader_store.data;
  std::printf("transport %s: the follower holds %zu keys, %s\n",
              std::string((*follower)->transport_name()).c_str(), follower_store.data.size(),
              same ? "identical to the leader's" : "DIFFERENT from the leader's");
  return same ? 0 : 1;
}
