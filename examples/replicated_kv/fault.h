// The fault each round of a failover run (failover_run.h) injects into the group.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace rdmarepl::kvdemo {

enum class Fault : uint8_t {
  kill_leader,    // SIGKILL of the leader; it restarts with its old log
  stop_leader,    // SIGSTOP of the leader for 2 lease TTLs (and until another leads): a
                  // stalled process; a write queued to it meanwhile must not be acknowledged
                  // once it runs again (SIGCONT)
  kill_follower,  // SIGKILL of a follower; it restarts with its old log
  cut_etcd,       // the leader cut off from etcd (a partition: its requests time out) until
                  // another member leads; it keeps its followers' connections
};

inline std::string_view to_string(Fault f) noexcept {
  switch (f) {
    case Fault::kill_leader:
      return "kill-leader";
    case Fault::stop_leader:
      return "stop-leader";
    case Fault::kill_follower:
      return "kill-follower";
    case Fault::cut_etcd:
      return "cut-etcd";
  }
  return "?";
}

inline std::span<const Fault> enum_values(Fault) noexcept {
  static constexpr std::array kAll = {Fault::kill_leader, Fault::stop_leader, Fault::kill_follower,
                                      Fault::cut_etcd};
  return kAll;
}

}  // namespace rdmarepl::kvdemo
