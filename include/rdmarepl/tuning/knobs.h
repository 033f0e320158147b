// Knobs: the settings a tuner may move, and the bounds it must stay inside.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rdmarepl/core/result.h"
#include "rdmarepl/tuning/polling_mode.h"

namespace rdmarepl::tuning {

// The settings in force on a replication channel. The channel applies a new set at a batch
// boundary; nothing here is read on the data path except by that one copy.
struct Knobs {
  uint64_t batch_bytes = 64 * 1024;  // a batch is sent when it reaches this size ...
  uint32_t flush_delay_us = 50;      // ... or when its oldest record is this old
  // The QP-count knob. On a leader channel: N, the connections (QPs on verbs, sockets on
  // TCP: "carriers") per follower that the fixed ChannelOptions::shards shards are spread
  // over (shard i on carrier i % N, moved only with nothing in flight), and the number of
  // poller threads (none in PollingMode::manual). The carriers come from the follower's QP
  // manager: those at or above N that no shard uses go back to its pool, still connected,
  // and are taken from it again when N grows (metric qps_reused); the active carriers'
  // completion queues are resized to their share of a fixed budget when N changes
  // (ibv_resize_cq on verbs; metric cq_resizes). It never changes the key -> shard mapping,
  // and is at most ChannelOptions::shards. See docs/replication.md, "Carriers".
  uint32_t shards = 2;
  PollingMode poll_mode = PollingMode::busy;  // busy, sleep or blocking
  uint32_t poll_interval_us = 10;             // sleep/blocking: the longest idle wait
  uint64_t pool_bytes = 64ull << 20;          // pre-registered pool size

  friend bool operator==(const Knobs&, const Knobs&) = default;
};

// "batch=65536B delay=50us shards=2 poll=busy/10us pool=64MiB", for logs and errors.
std::string to_string(const Knobs& k);

// Allowed values of one integer knob: min <= v <= max and (v - min) a multiple of step.
// `step` is also the unit of one additive move (the heuristic tuner's additive increase).
struct KnobRange {
  uint64_t min = 0;
  uint64_t max = 0;
  uint64_t step = 1;

  // Clamps `v` into [min, max] and rounds it to the nearest allowed value.
  [[nodiscard]] uint64_t snap(uint64_t v) const noexcept;
  [[nodiscard]] bool contains(uint64_t v) const noexcept {
    return v >= min && v <= max && (v - min) % step == 0;
  }
};

struct KnobBounds {
  KnobRange batch_bytes{4 * 1024, 4 * 1024 * 1024, 4 * 1024};
  KnobRange flush_delay_us{0, 2000, 5};
  KnobRange shards{1, 16, 1};
  KnobRange poll_interval_us{1, 1000, 1};
  KnobRange pool_bytes{8ull << 20, 4ull << 30, 1ull << 20};
  // Bit i set = PollingMode(i) allowed (manual never is). At least one bit must be set.
  uint8_t poll_modes = 0b111;

  [[nodiscard]] bool allows(PollingMode m) const noexcept {
    return (poll_modes >> static_cast<unsigned>(m)) & 1u;
  }
};

// Checks that every range is well formed (min <= max, step > 0, step fits the range) and
// at least one poll mode is allowed.
Status validate(const KnobBounds& b);
// Checks that every knob lies inside `b`; the error names the knob, its value and the range.
Status validate(const Knobs& k, const KnobBounds& b);
// The nearest knobs that `validate(k, b)` accepts. `b` must be valid.
Knobs clamp(const Knobs& k, const KnobBounds& b) noexcept;

}  // namespace rdmarepl::tuning
