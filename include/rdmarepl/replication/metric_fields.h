// The channel's metrics, one line each: every field of MetricsSnapshot (and its atomic in
// ChannelMetrics) is declared here with its kind, unit and help text. The structs,
// ChannelMetrics::snapshot(), the field tables kMetricFields / kHistogramFields and every
// writer built on them (the demo's control lines, rdmarepl-bench --json) derive from these
// lists, so a new metric is one line here plus its row in docs/replication.md ("Metrics"),
// which a test checks. The per-follower arrays (follower_lag, follower_lag_bytes,
// follower_connected) and the per-shard vectors (shard_seq, shard_lag, shard_records,
// shard_bytes, shard_batches, shard_window_stalls, link_*) are the only fields outside the
// lists; the per-shard histograms (shard_<name>) come from RDMAREPL_SHARD_HISTOGRAMS.
#pragma once

// X(name, kind, unit, help): a uint64_t; kind is counter (only grows) or gauge.
#define RDMAREPL_CHANNEL_METRICS(X)                                                                \
  X(records_replicated, counter, "records", "leader: records accepted by replicate()/erase()")     \
  X(bytes_replicated, counter, "bytes", "leader: encoded record bytes")                            \
  X(batches_sealed, counter, "batches", "leader: batches closed (each is sent once per follower)") \
  X(batches_sent, counter, "batches", "leader: batch writes posted, over all followers")           \
  X(batches_resent, counter, "batches", "leader: of which catch-up resends after a reconnect")     \
  X(credit_stalls, counter, "events", "leader: a batch waited for ring space or queue depth")      \
  X(window_stalls, counter, "events", "leader: replicate() waited for the retained window")        \
  X(queue_depth, gauge, "batches", "leader: sealed batches not yet acked by every follower")       \
  X(retained_bytes, gauge, "bytes", "leader: bytes the retained windows hold for followers")       \
  X(catchup_bytes, counter, "bytes", "leader: log batches and checkpoint chunks sent to catch up") \
  X(reconnects, counter, "connections", "connections (re)established after the first")             \
  X(protocol_errors, counter, "events", "bad batches, immediates, frames (connection dropped)")    \
  X(ack_timeouts, counter, "events", "leader: connections dropped by ack_timeout")                 \
  X(handshake_timeouts, counter, "connections",                                                    \
    "follower: accepted connections whose handshake did not end within connect_timeout")           \
  X(handshakes_refused, counter, "connections",                                                    \
    "follower: connections closed at once (admission limits) or whose handshake failed")           \
  X(leaders_refused, counter, "connections",                                                       \
    "follower: leaders refused by identity and epoch (another leader holds the shards)")           \
  X(leader_sessions, gauge, "sessions",                                                            \
    "follower: 1 while a leader's session is established, else 0")                                 \
  X(probes_answered, counter, "connections",                                                       \
    "follower: rdmarepl-doctor probes answered (no store, session or epoch touched)")              \
  X(auth_failures, counter, "events", "writes of the peer whose MAC failed (connection dropped)")  \
  X(carriers, gauge, "connections", "leader: carriers the shards are spread over, per follower")   \
  X(carrier_moves, counter, "events", "leader: a shard moved to another carrier (drained first)")  \
  X(qps_reused, counter, "connections",                                                            \
    "leader: carriers taken from the QP manager's pool instead of connecting")                     \
  X(cq_resizes, counter, "events",                                                                 \
    "leader: carrier completion queues resized (verbs: ibv_resize_cq) for a new N or the pool")    \
  X(records_applied, counter, "records", "follower: Store::apply calls")                           \
  X(bytes_applied, counter, "bytes",                                                               \
    "follower: encoded record bytes applied (duplicates excluded)")                                \
  X(records_recovered, counter, "records", "records replayed from the channel's WAL at create()")  \
  X(records_skipped, counter, "records", "follower: duplicates skipped after a reconnect")         \
  X(batches_applied, counter, "batches", "follower: batches applied")                              \
  X(checkpoints_shipped, counter, "checkpoints", "leader: checkpoints a follower installed")       \
  X(checkpoints_installed, counter, "checkpoints", "follower: checkpoints received and installed") \
  X(knob_changes, counter, "events", "apply_knobs() calls that changed at least one setting")      \
  X(worker_changes, counter, "events", "of which changed the number of poller threads")            \
  X(tuner_decisions, counter, "events", "decisions made by the channel's tuner")                   \
  X(followers, gauge, "followers", "leader: followers configured (per-follower entries used)")     \
  X(memory_registrations, counter, "registrations",                                                \
    "arenas registered for the channel's memory and its zero-copy pool; all at create(), none "    \
    "after")                                                                                       \
  X(region_values_gathered, counter, "records",                                                    \
    "leader: replicate() values sent by gather from a registered store region")                    \
  X(region_cache_hits, counter, "records",                                                         \
    "leader: values in a store region whose registration was cached (gathered)")                   \
  X(region_cache_misses, counter, "records",                                                       \
    "leader: values in a store region released while idle (copied; registered again)")             \
  X(region_registrations, counter, "registrations",                                                \
    "leader: store regions registered (register_region(), again after an idle release)")           \
  X(region_deregistrations, counter, "registrations",                                              \
    "leader: store region registrations released (idle release, unregister_region())")

// X(name, unit, help): a metrics::Histogram (snapshot: count, sum, max, percentiles), kept
// for the whole channel. The WAL's two are channel-wide by nature: a channel has one log,
// shared by its shards, and one sync covers every shard's frames.
#define RDMAREPL_CHANNEL_HISTOGRAMS(X)                                    \
  X(batch_bytes, "bytes", "sealed batch sizes")                           \
  X(batch_records, "records", "records per sealed batch")                 \
  X(wal_append_latency_ns, "nanoseconds",                                 \
    "WAL append: the frame's write (its sync is in wal_sync_latency_ns)") \
  X(wal_sync_latency_ns, "nanoseconds", "WAL group-commit sync (fdatasync or pmem drain)")

// X(name, unit, help): a histogram the engine keeps per shard (MetricsSnapshot::shard_<name>,
// one entry per shard; no ChannelMetrics member). The channel-wide field `name` is not
// recorded on its own: snapshots derive it as the sum of the shards' (sum_shard_histograms()),
// so the two views cannot disagree.
#define RDMAREPL_SHARD_HISTOGRAMS(X) \
  X(ack_latency_ns, "nanoseconds", "replicate() -> committed under the ack mode")
