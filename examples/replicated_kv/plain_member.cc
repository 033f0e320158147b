// --role member --plain (failover_member.h): the group's processes and channel options as
// a plain ReplicationChannel, with no coordinator: the baseline a group's write throughput
// is measured against.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "burst.h"
#include "child_process.h"
#include "failover_member.h"
#include "failover_run.h"
#include "kv_store.h"
#include "rdmarepl/core/log.h"
#include "rdmarepl/replication/channel.h"

namespace rdmarepl::kvdemo {

namespace {

using namespace std::chrono_literals;

// The options ReplicaNode gives its channel in epoch 1, with the first member leading.
replication::ChannelOptions plain_options(const failover::NodeOptions& o) {
  replication::ChannelOptions c = o.channel;
  const bool leads = o.id == o.members.front().id;
  c.role = leads ? replication::Role::leader : replication::Role::follower;
  c.node_id = o.id;
  c.leader_epoch = 1;
  c.wal_dir = o.dir + "/wal";
  c.peers.clear();
  for (const auto& m : o.members) {
    if (m.id == o.id)
      c.listen = m.endpoint;
    else if (leads)
      c.peers.push_back(m.endpoint);
  }
  if (leads) c.listen = {};
  return c;
}

}  // namespace

int run_plain_member(const Flags& flags, ControlSocket& ctl) {
  if (std::getenv("RDMAREPL_LOG_LEVEL") == nullptr) log::set_level(log::Level::error);
  auto options = member_options(flags);
  if (!options) return fail(ctl, "member: " + options.error().message());
  const auto value_size = static_cast<uint32_t>(flags.get_u64("value-size", 1024).value());
  std::error_code ec;
  std::filesystem::create_directories(options->dir, ec);
  const replication::ChannelOptions co = plain_options(*options);
  const bool leads = co.role == replication::Role::leader;
  KvStore store;
  auto created = replication::ReplicationChannel<KvStore>::create(co, store);
  if (!created) return fail(ctl, options->id + ": " + created.error().to_string());
  auto& channel = **created;
  if (!ctl.send_line("ready")) return 1;
  for (;;) {
    auto line = ctl.read_line(std::chrono::hours(24));
    if (!line || *line == "quit") break;
    if (*line == "role") {
      (void)ctl.send_line(fmt::format("role name={} epoch=1 leader={} last={}",
                                      leads ? "leader" : "follower", options->members.front().id,
                                      channel.last_seq(0)));
    } else if (line->rfind("burst ", 0) == 0 && leads) {
      auto first = parse_count(field(*line, "first"), "first");
      auto count = parse_count(field(*line, "count"), "count");
      if (!first || !count) return fail(ctl, "member: bad burst line '" + *line + "'");
      (void)ctl.send_line(timed_burst(
          *first, *count,
          [&](uint64_t i) -> Result<replication::Ticket> {
            const std::string key = failover_key(i), value = failover_value(i, value_size);
            store.put(key, value);
            auto w = channel.replicate(key, value);
            if (!w.ok()) return Error(Errc::busy, std::string(replication::describe(w.status)));
            return w.ticket;
          },
          [&](replication::Ticket t) {
            channel.flush();
            return channel.wait(t, 60s);
          }));
    } else if (*line == "cpu") {
      (void)ctl.send_line(fmt::format("cpu seconds={:.6f}", self_cpu_seconds()));
    } else if (*line == "digest") {
      (void)ctl.send_line(
          fmt::format("digest value={} last={}", store.digest().to_string(), channel.last_seq(0)));
    } else {
      return fail(ctl, "member --plain: unknown or misplaced command '" + *line + "'");
    }
  }
  return 0;
}

}  // namespace rdmarepl::kvdemo
