// ChannelOptions: everything a ReplicationChannel is built from. Defaults suit a LAN with a
// few followers; docs/replication.md explains each knob.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rdmarepl/core/result.h"
#include "rdmarepl/transport/kind.h"
#include "rdmarepl/transport/types.h"
#include "rdmarepl/tuning/knobs.h"
#include "rdmarepl/tuning/tuner.h"
#include "rdmarepl/tuning/tuner_options.h"
#include "rdmarepl/wal/writer_options.h"

namespace rdmarepl::replication {

enum class Role : uint8_t { leader, follower };

// `automatic` picks verbs when the build has it and an active RDMA device exists, else TCP.
using transport::TransportKind;

// When a write counts as committed (wait() returns):
//   none    when replicate() returned (fire and forget)
//   one     when at least one follower applied it
//   all     when every configured follower applied it
//   quorum  when a majority of the cluster (leader + followers) has it: floor(F/2 + 1/2)
//           follower acks with F followers (the leader counts itself)
enum class AckMode : uint8_t { none, one, all, quorum };

// What wait() does when the ack mode needs a follower that is disconnected:
//   wait  keep waiting (up to the caller's timeout); the follower catches up when back
//   fail  fail with Errc::timeout once the follower has been away for `away_timeout`
enum class AwayPolicy : uint8_t { wait, fail };

// How the optional background poller drives progress() (rdmarepl/tuning/polling_mode.h):
//   manual    no poller thread: the store calls progress() from its own event loop
//   busy      spin on progress() (lowest latency, one core)
//   sleep     sleep `poll_interval` whenever a round found nothing to do
//   blocking  block in Connection::wait (up to `poll_interval`) when a round was idle
using tuning::PollingMode;

// A tuner that moves the leader's knobs live (docs/replication.md, "Live knobs"). Off by
// default; when enabled the leader builds the tuner at create(), observes its own metrics
// every `period` and applies the tuner's knobs with apply_knobs(), on a thread of its own.
struct TuningOptions {
  bool enabled = false;
  // A built-in tuner by name: "static", "heuristic", "xgboost" (the default) or "lstm", or
  // any name added to tuning::TunerRegistry::global().
  std::string tuner = std::string(tuning::kDefaultTuner);
  // A user tuner: when set, it is called once at create() and `tuner` is ignored.
  std::function<std::unique_ptr<tuning::Tuner>()> make_tuner;
  std::chrono::milliseconds period{100};
  // The knobs never leave these bounds (the channel further limits them to what it can do;
  // see ReplicationChannel::apply_knobs).
  tuning::KnobBounds bounds;
  double latency_target_p99_us = 500;
  // Feed the tuner a sample built from each pair of consecutive windows (online learning).
  bool learn = true;
  // The machine's memory bandwidth (bytes/s, e.g. what a streaming copy reaches), from
  // which Observation::membw_ratio is estimated. 0: unknown, and the ratio stays absent.
  double memory_bandwidth_bytes_per_s = 0;
  tuning::HeuristicOptions heuristic;
  // The model-driven tuners ("xgboost", "lstm"): model file, guardrails, online learning.
  tuning::ModelTunerOptions model;
};

// When a batch written to the channel's write-ahead log (ChannelOptions::wal_dir) counts as
// durable:
//   none      after write(2): the OS page cache holds it (survives a process crash, not a
//             machine crash)
//   batch     after an fdatasync that covers it (group commit: one sync covers every batch
//             written before it started). A leader sends a batch only once it is synced and
//             a follower acknowledges only synced batches, so no write counts as committed,
//             under any ack mode, before it is on stable storage
//   interval  a background thread syncs every `durability_interval`
using wal::Durability;

// Where the write-ahead log's frames go (docs/wal_format.md, "Backends"):
//   automatic  persistent memory (libpmem) when the log's segment files map as such (a DAX
//              file system), else the file backend; the choice is logged with its reason
//   file       pwritev + fdatasync
//   pmem       libpmem; create() fails, naming the directory, when the build has no libpmem
//              or the directory is not on a DAX file system
using WalBackend = wal::Backend;

struct ChannelOptions {
  Role role = Role::leader;
  std::string node_id = "rdmarepl";
  // Leader: the followers to replicate to. Follower: unused.
  std::vector<transport::Endpoint> peers;
  // Follower: where to listen (port 0 picks a free port; see local_endpoint()).
  transport::Endpoint listen;
  TransportKind transport = TransportKind::automatic;
  // The key both ends prove in the handshake (docs/wire_format.md, "Bootstrap handshake");
  // the same on every node. Empty: no authentication, so that anyone who reaches a
  // follower's port can act as its leader and write into its store.
  std::string pre_shared_key;
  // Follower: listening on an address other than loopback (127.0.0.0/8, ::1, localhost)
  // without a pre_shared_key is refused at create() unless this is set, for a network where
  // every host that can reach the port is trusted. A warning is logged either way.
  bool allow_unauthenticated = false;
  // How the verbs transport the channel creates sets connections up: false, over a TCP
  // socket to the same host:port (the bootstrap handshake); true, with RDMA CM (librdmacm),
  // the handshake then running over the new QP (docs/verbs.md, "RDMA CM"). peers and listen
  // must then be IP addresses of the RDMA device's interface. transport=automatic uses it
  // when it picks verbs; transport=tcp refuses it.
  bool rdma_cm = false;

  AckMode ack_mode = AckMode::all;
  AwayPolicy away_policy = AwayPolicy::wait;
  std::chrono::milliseconds away_timeout{5000};

  // Sharding: a key always maps to shard hash(key) % shards; each shard has its own
  // connection (queue pair) to each follower and its own sequence numbers. Leader and
  // followers must agree on the count (checked in the handshake).
  uint32_t shards = 4;

  // Batching: a batch is sent when it reaches `batch_bytes` or when its first record is
  // `flush_delay` old (checked by progress()), whichever comes first.
  size_t batch_bytes = 64 * 1024;
  std::chrono::microseconds flush_delay{200};

  // Memory, taken at create() from arenas registered then, one per pool (docs/replication.md,
  // "Memory"):
  //   follower: per shard, two receive rings of `ring_bytes` and two large-record buffers
  //             big enough for one record of `max_value_bytes` (two generations, so that a
  //             reconnecting leader never writes where the old connection is still read;
  //             docs/replication.md, "Reconnecting: two buffer generations")
  //   leader:   one retained window of `retain_bytes` per shard (the batches kept for
  //             followers that are behind or reconnecting)
  size_t ring_bytes = 4 * 1024 * 1024;
  size_t retain_bytes = 64 * 1024 * 1024;
  size_t max_value_bytes = 16 * 1024 * 1024;
  // Leader: the registered slab pool behind allocate() / replicate(key, Buffer) (zero-copy
  // values), registered once at create(). 0 disables it (allocate() returns empty
  // Buffers); otherwise at least 1 MiB (one chunk of the largest size class). It must hold
  // the values of every zero-copy batch still in the retained windows, rounded up to their
  // size class (a power of two), plus the Buffers the store holds.
  size_t zero_copy_pool_bytes = 16 * 1024 * 1024;
  // Leader: a store region (register_region()) from which no value was replicated for this
  // long loses its registration (the control thread releases it; the next value from it is
  // copied and the region registered again). 10 ms .. 24 h.
  std::chrono::milliseconds region_idle_timeout{std::chrono::seconds(300)};
  // Batches in flight per connection (bounded by posted receives on the peer).
  uint32_t queue_depth = 256;

  // A replicate() that finds the retained window full (a connected follower is slow) waits
  // for acknowledgements at most this long, then returns WriteStatus::stalled.
  std::chrono::milliseconds stall_timeout{10000};
  // Leader: a connected follower that has batches in flight and answers nothing for this
  // long loses its connection, as if it had gone away (away_policy applies; the retained
  // window no longer waits for it, and it is caught up when it reconnects). Without it one
  // connected follower that never acknowledges would pin the window and stall every write.
  // 0: never.
  std::chrono::milliseconds ack_timeout{30000};

  // Leader: callbacks registered with on_commit() / commit_future() that may be pending per
  // shard at once (their storage is allocated at create()).
  size_t max_pending_callbacks = 16384;

  PollingMode polling = PollingMode::busy;
  std::chrono::microseconds poll_interval{50};

  std::chrono::milliseconds connect_timeout{2000};
  // Follower: accepted connections that may be in their handshake at once (1..4096). Each
  // has connect_timeout from its accept to finish; one that sends nothing meanwhile is
  // closed (counted in handshake_timeouts). When it is full, the oldest silent connection
  // is closed to make room; once half of it is in use, connections beyond a quarter of it
  // from one address, and any from an address backing off after failed handshakes, are
  // closed at once (handshakes_refused; docs/replication.md, "Handshakes").
  uint32_t max_handshakes = 64;
  // The leadership this channel belongs to. Leader: its epoch, sent in every handshake. A
  // follower refuses a leader whose epoch is below the highest it accepted, and a leader of
  // another identity (node_id) whose epoch is not above that of the live leader holding its
  // shards. On failover, start the new leader with a higher epoch than the old one's
  // (docs/replication.md, "Leader identity and epoch"). Follower: 0 (default) takes any
  // leader those rules allow; otherwise only a leader of exactly this epoch (what a
  // failover group's member does, docs/failover.md).
  uint64_t leader_epoch = 0;
  // Leader: after a failed connection attempt (or a dropped connection that cannot be
  // re-established at once) the next attempt comes reconnect_interval later; each further
  // consecutive failure doubles the wait, up to reconnect_max_interval, at which a follower
  // that stays away is then retried (and its failures logged at most that often). The
  // sequence starts again only when a connection that made progress (the follower
  // acknowledged records sent on it) is lost: one that fails right after its handshake
  // counts as a failure.
  std::chrono::milliseconds reconnect_interval{100};
  std::chrono::milliseconds reconnect_max_interval{2000};

  // Durability (docs/replication.md, "Durability"). Empty `wal_dir`: no write-ahead log,
  // the channel keeps everything in memory. Otherwise every batch is appended to the log in
  // this directory (created if missing) before it is sent (leader) or applied (follower),
  // and a channel created over a directory with content recovers from it: newest valid
  // checkpoint -> Store::restore, then the logged batches after it -> Store::apply.
  std::string wal_dir;
  Durability durability = Durability::batch;
  std::chrono::milliseconds durability_interval{10};  // Durability::interval
  uint64_t wal_segment_bytes = 64u << 20;
  WalBackend wal_backend = WalBackend::automatic;
  // Checkpoints (only for stores that model SnapshottableStore): one is taken in the
  // background when `checkpoint_every_bytes` of log were written since the last one, or
  // `checkpoint_every` has passed and something was written; 0 disables that trigger.
  // The log before the older of the two newest checkpoints is deleted.
  uint64_t checkpoint_every_bytes = 0;
  std::chrono::seconds checkpoint_every{0};
  // Leader with wal_dir: bytes per second that catching followers up may send (batches
  // read back from the log and shipped checkpoint chunks, all followers together; a token
  // bucket holding up to 100 ms of it). 0 (default): no limit beyond one catch-up batch or
  // chunk in flight at a time. At least 65536 when set.
  uint64_t catchup_bytes_per_sec = 0;

  // Leader only: a tuner that moves batch_bytes, flush_delay, polling, poll_interval, the
  // worker threads and the usable retained window live.
  TuningOptions tuning;
};

std::string_view to_string(Role r) noexcept;
std::string_view to_string(AckMode m) noexcept;
std::span<const AckMode> enum_values(AckMode) noexcept;

// Checks the options for consistency; the error names the field, its value and the fix.
Status validate(const ChannelOptions& options);

}  // namespace rdmarepl::replication
