#include "rdmarepl/replication/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "batch_limits.h"
#include "imm.h"
#include "listen_policy.h"
#include "rdmarepl/features.h"
#include "rdmarepl/memory/size_classes.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/replication/ticket.h"
#include "rdmarepl/wal/format.h"

namespace rdmarepl::replication {

std::string_view to_string(Role r) noexcept {
  return r == Role::leader ? "leader" : "follower";
}

std::string_view to_string(AckMode m) noexcept {
  switch (m) {
    case AckMode::none:
      return "none";
    case AckMode::one:
      return "one";
    case AckMode::all:
      return "all";
    case AckMode::quorum:
      return "quorum";
  }
  return "?";
}

std::span<const AckMode> enum_values(AckMode) noexcept {
  static constexpr AckMode kAll[] = {AckMode::none, AckMode::one, AckMode::all, AckMode::quorum};
  return kAll;
}

std::string_view describe(WriteStatus s) noexcept {
  switch (s) {
    case WriteStatus::ok:
      return "ok";
    case WriteStatus::too_large:
      return "key over 64 KiB or value over ChannelOptions::max_value_bytes";
    case WriteStatus::stalled:
      return "the retained window stayed full for stall_timeout: a follower is not acknowledging";
    case WriteStatus::closed:
      return "the channel is closed";
    case WriteStatus::not_leader:
      return "writes are only accepted by a leader channel";
    case WriteStatus::no_buffer:
      return "replicate(key, Buffer) was given an empty Buffer: allocate() found no free "
             "chunk (the pool is exhausted, the size is over 1 MiB, or the channel is a "
             "follower); copy the value with replicate(key, string_view) instead";
    case WriteStatus::group_spans_shards:
      return "replicate_group(): the group's keys map to more than one shard; a group is "
             "replicated atomically only within one shard. Choose keys of one shard "
             "(ReplicationChannel::shard_of()) or use ChannelOptions::shards = 1";
    case WriteStatus::bad_group_size:
      return "replicate_group(): the group is empty or its records exceed "
             "ReplicationChannel::group_limit_bytes() (a quarter of ring_bytes); split it or "
             "raise ring_bytes";
  }
  return "?";
}

namespace {

Status bad(std::string msg) {
  return Status(Error(Errc::invalid_argument, std::move(msg)));
}

// Shard count, and the transport the connection options need.
Status check_shards_and_transport(const ChannelOptions& o) {
  if (o.shards == 0 || o.shards > 1024)
    return bad(
        fmt::format("ChannelOptions::shards = {} is out of range; use 1..1024 (one "
                    "connection per shard and follower)",
                    o.shards));
  if (o.rdma_cm && o.transport == TransportKind::tcp)
    return bad(
        "ChannelOptions::rdma_cm = true sets verbs connections up with RDMA CM, but "
        "transport = tcp; use transport = verbs (or automatic), or leave rdma_cm false");
  return ok_status();
}

// A follower on a non-loopback address needs a key, or an explicit opt-out.
Status check_authentication(const ChannelOptions& o) {
  if (o.role != Role::follower || o.allow_unauthenticated ||
      !detail::open_to_network(o.listen.host, o.pre_shared_key))
    return ok_status();
  return bad(fmt::format(
      "ChannelOptions::listen = \"{}\" is not a loopback address and pre_shared_key is empty: "
      "anyone who can reach port {} could act as this follower's leader and write into its "
      "store. Set pre_shared_key (the same on every node), or set allow_unauthenticated = "
      "true if every host that can reach the port is trusted",
      o.listen.host, o.listen.port));
}

// Ring, batch, value and queue sizes.
Status check_sizes(const ChannelOptions& o) {
  if (o.ring_bytes % kBatchAlign != 0 || o.ring_bytes < 64 * 1024 || o.ring_bytes > kMaxRingBytes)
    return bad(
        fmt::format("ChannelOptions::ring_bytes = {} must be a multiple of 8 between 64 KiB "
                    "and 8 GiB",
                    o.ring_bytes));
  if (o.batch_bytes < detail::kMinBatchBytes || o.batch_bytes > detail::max_live_batch_bytes(o))
    return bad(
        fmt::format("ChannelOptions::batch_bytes = {} must be between {} and ring_bytes/4 "
                    "= {}; raise ring_bytes or lower batch_bytes",
                    o.batch_bytes, detail::kMinBatchBytes, detail::max_live_batch_bytes(o)));
  if (o.max_value_bytes > (uint64_t{1} << 31))
    return bad(fmt::format("ChannelOptions::max_value_bytes = {} exceeds the 2 GiB limit",
                           o.max_value_bytes));
  if (o.zero_copy_pool_bytes != 0 && (o.zero_copy_pool_bytes < memory::kMaxClassSize ||
                                      o.zero_copy_pool_bytes > (size_t{1} << 40)))
    return bad(
        fmt::format("ChannelOptions::zero_copy_pool_bytes = {} is out of range: use 0 "
                    "(no zero-copy pool) or {} (1 MiB) .. 1 TiB",
                    o.zero_copy_pool_bytes, memory::kMaxClassSize));
  if (o.region_idle_timeout < std::chrono::milliseconds(10) ||
      o.region_idle_timeout > std::chrono::hours(24))
    return bad(
        fmt::format("ChannelOptions::region_idle_timeout = {} ms is out of range; use 10 ms .. "
                    "86400000 ms (24 h); the default is 300000 ms (300 s)",
                    o.region_idle_timeout.count()));
  if (o.queue_depth < 4 || o.queue_depth > 4096)
    return bad(fmt::format("ChannelOptions::queue_depth = {} is out of range; use 4..4096",
                           o.queue_depth));
  return ok_status();
}

// Reconnect back-off and the commit-callback capacity.
Status check_reconnect_and_callbacks(const ChannelOptions& o) {
  if (o.reconnect_interval.count() < 0 || o.reconnect_max_interval < o.reconnect_interval)
    return bad(
        fmt::format("ChannelOptions::reconnect_max_interval = {} ms must be at least "
                    "reconnect_interval = {} ms (and neither negative)",
                    o.reconnect_max_interval.count(), o.reconnect_interval.count()));
  if (o.max_handshakes < 1 || o.max_handshakes > 4096)
    return bad(
        fmt::format("ChannelOptions::max_handshakes = {} is out of range; use 1..4096 (default 64)",
                    o.max_handshakes));
  if (o.ack_timeout.count() < 0)
    return bad(
        fmt::format("ChannelOptions::ack_timeout = {} ms is negative; use 0 (never) or "
                    "a time longer than the slowest apply and sync of a batch",
                    o.ack_timeout.count()));
  if (o.max_pending_callbacks > (size_t{1} << 24))
    return bad(
        fmt::format("ChannelOptions::max_pending_callbacks = {} is out of range; use "
                    "0..16777216 (0 disables on_commit())",
                    o.max_pending_callbacks));
  return ok_status();
}

// With wal_dir: the durability mode and the log backend and segment size.
Status check_wal_durability(const ChannelOptions& o) {
  if (o.durability != Durability::none && o.durability != Durability::batch &&
      o.durability != Durability::interval)
    return bad(
        fmt::format("ChannelOptions::durability = {} is not a known value; use none, "
                    "batch or interval",
                    static_cast<unsigned>(o.durability)));
  if (o.durability == Durability::interval && o.durability_interval.count() <= 0)
    return bad(
        fmt::format("ChannelOptions::durability_interval = {} ms must be positive with "
                    "durability=interval",
                    o.durability_interval.count()));
  if (o.wal_backend != WalBackend::automatic && o.wal_backend != WalBackend::file &&
      o.wal_backend != WalBackend::pmem)
    return bad(
        fmt::format("ChannelOptions::wal_backend = {} is not a known value; use automatic, "
                    "file or pmem",
                    static_cast<unsigned>(o.wal_backend)));
  if (o.wal_backend == WalBackend::pmem && RDMAREPL_HAVE_PMEM == 0)
    return bad(
        "ChannelOptions::wal_backend = pmem but this build of rdmarepl has no "
        "persistent-memory backend: rebuild with libpmem-dev installed "
        "(RDMAREPL_WITH_PMEM=AUTO or ON) or use wal_backend = automatic or file");
  if (o.wal_segment_bytes < (1u << 20) || o.wal_segment_bytes > (uint64_t{1} << 40))
    return bad(
        fmt::format("ChannelOptions::wal_segment_bytes = {} is out of range; use 1 MiB "
                    "..1 TiB",
                    o.wal_segment_bytes));
  return ok_status();
}

// With wal_dir: the largest batch fits a frame and a segment; checkpoint timing.
Status check_wal_frames(const ChannelOptions& o) {
  // Under any batch size apply_knobs() may set (batch_limits.h).
  const uint64_t largest = detail::max_batch_bytes(o);
  if (largest > wal::kMaxFramePayload)
    return bad(fmt::format(
        "with wal_dir set a batch must fit one WAL frame ({} bytes) but "
        "max_value_bytes = {}, batch_bytes = {} and ring_bytes = {} allow "
        "batches of {} bytes; lower them",
        wal::kMaxFramePayload, o.max_value_bytes, o.batch_bytes, o.ring_bytes, largest));
  if (o.wal_segment_bytes < largest + wal::kSegmentHeaderSize + 2 * wal::kFrameHeaderSize)
    return bad(
        fmt::format("ChannelOptions::wal_segment_bytes = {} cannot hold the largest "
                    "batch ({} bytes with max_value_bytes = {}); raise "
                    "wal_segment_bytes or lower max_value_bytes",
                    o.wal_segment_bytes, largest, o.max_value_bytes));
  if (o.checkpoint_every.count() < 0)
    return bad(
        fmt::format("ChannelOptions::checkpoint_every = {} s is negative; use 0 to "
                    "disable the time trigger",
                    o.checkpoint_every.count()));
  return ok_status();
}

// Without wal_dir: nothing that only means something with a log is set.
Status check_without_wal(const ChannelOptions& o) {
  if (o.wal_backend != WalBackend::automatic) {
    return bad(
        fmt::format("ChannelOptions::wal_backend = {} but wal_dir is empty: the backend is "
                    "that of the write-ahead log; set wal_dir or leave wal_backend automatic",
                    to_string(o.wal_backend)));
  }
  if (o.checkpoint_every_bytes != 0 || o.checkpoint_every.count() != 0) {
    return bad(
        "ChannelOptions::checkpoint_every_bytes / checkpoint_every are set but wal_dir is "
        "empty: checkpoints live in the write-ahead log directory; set wal_dir or clear the "
        "checkpoint triggers");
  }
  return ok_status();
}

// The catch-up rate limit.
Status check_catchup(const ChannelOptions& o) {
  if (o.catchup_bytes_per_sec != 0) {
    if (o.role != Role::leader || o.wal_dir.empty())
      return bad(fmt::format(
          "ChannelOptions::catchup_bytes_per_sec = {} limits the catch-up a leader runs from its "
          "write-ahead log; set it on a leader with wal_dir, or leave it 0",
          o.catchup_bytes_per_sec));
    if (o.catchup_bytes_per_sec < 65536)
      return bad(fmt::format(
          "ChannelOptions::catchup_bytes_per_sec = {} is below 65536: a follower would take "
          "seconds per batch to catch up; raise it, or use 0 for no limit",
          o.catchup_bytes_per_sec));
  }
  return ok_status();
}

// On a leader: followers, ack mode and the retained window.
Status check_leader(const ChannelOptions& o) {
  if (o.role == Role::leader) {
    if (o.peers.size() > kMaxFollowers)
      return bad(fmt::format("{} followers configured; at most {} are supported", o.peers.size(),
                             kMaxFollowers));
    if (o.peers.empty() && o.ack_mode != AckMode::none)
      return bad(
          fmt::format("a leader with ack_mode={} needs at least one follower in "
                      "ChannelOptions::peers (or use ack_mode=none)",
                      to_string(o.ack_mode)));
    const uint64_t need = detail::min_window_bytes(o, o.batch_bytes);
    if (o.retain_bytes < need || o.retain_bytes % kBatchAlign != 0)
      return bad(
          fmt::format("ChannelOptions::retain_bytes = {} is too small: it must hold two of "
                      "the largest records (max_value_bytes = {}) plus two batches, i.e. at "
                      "least {} bytes (and be a multiple of 8); raise retain_bytes or lower "
                      "max_value_bytes",
                      o.retain_bytes, o.max_value_bytes, need));
  }
  return ok_status();
}

// The online tuner.
Status check_tuning(const ChannelOptions& o) {
  if (o.tuning.enabled) {
    if (o.role != Role::leader)
      return bad(
          "ChannelOptions::tuning.enabled is set on a follower; the tuner runs on the leader "
          "(disable it on followers)");
    if (o.tuning.period.count() <= 0)
      return bad(fmt::format("ChannelOptions::tuning.period = {} ms must be positive",
                             o.tuning.period.count()));
    if (Status st = tuning::validate(o.tuning.bounds); !st.ok())
      return bad(fmt::format("ChannelOptions::tuning.bounds: {}", st.error().message()));
  }
  const double bw = o.tuning.memory_bandwidth_bytes_per_s;
  if (!(bw >= 0) || !std::isfinite(bw))
    return bad(fmt::format(
        "ChannelOptions::tuning.memory_bandwidth_bytes_per_s = {} is not a bandwidth; give "
        "the machine's memory bandwidth in bytes/s, or 0 when it is unknown",
        bw));
  return ok_status();
}

}  // namespace

// Checks in a fixed order: the first failing check's message is returned.
Status validate(const ChannelOptions& o) {
  using Check = Status (*)(const ChannelOptions&);
  const bool wal = !o.wal_dir.empty();
  const Check checks[] = {check_shards_and_transport,
                          check_authentication,
                          check_sizes,
                          check_reconnect_and_callbacks,
                          wal ? check_wal_durability : nullptr,
                          wal ? check_wal_frames : check_without_wal,
                          check_catchup,
                          check_leader,
                          check_tuning};
  for (Check check : checks)
    if (check != nullptr)
      if (Status st = check(o); !st.ok()) return st;
  return ok_status();
}

}  // namespace rdmarepl::replication
