#include "rdmarepl/tuning/knobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace rdmarepl::tuning {

std::string to_string(const Knobs& k) {
  return fmt::format("batch={}B delay={}us shards={} poll={}/{}us pool={}MiB", k.batch_bytes,
                     k.flush_delay_us, k.shards, to_string(k.poll_mode), k.poll_interval_us,
                     k.pool_bytes >> 20);
}

uint64_t KnobRange::snap(uint64_t v) const noexcept {
  if (v <= min) return min;
  if (v >= max) return max - (max - min) % step;
  uint64_t k = (v - min + step / 2) / step;
  uint64_t r = min + k * step;
  return r > max ? r - step : r;
}

namespace {

Status check_range(const KnobRange& r, std::string_view name) {
  if (r.step == 0 || r.min > r.max || (r.min != r.max && r.step > r.max - r.min)) {
    return Error(Errc::invalid_argument,
                 fmt::format("knob bounds for {} are malformed (min={} max={} step={}): need "
                             "min <= max and 0 < step <= max - min",
                             name, r.min, r.max, r.step));
  }
  return {};
}

Status check_value(uint64_t v, const KnobRange& r, std::string_view name) {
  if (!r.contains(v)) {
    return Error(Errc::invalid_argument,
                 fmt::format("knob {}={} is outside its bounds [{}, {}] step {}: choose an allowed "
                             "value or widen the bounds",
                             name, v, r.min, r.max, r.step));
  }
  return {};
}

}  // namespace

Status validate(const KnobBounds& b) {
  RDMAREPL_TRY(check_range(b.batch_bytes, "batch_bytes"));
  RDMAREPL_TRY(check_range(b.flush_delay_us, "flush_delay_us"));
  RDMAREPL_TRY(check_range(b.shards, "shards"));
  RDMAREPL_TRY(check_range(b.poll_interval_us, "poll_interval_us"));
  RDMAREPL_TRY(check_range(b.pool_bytes, "pool_bytes"));
  for (const auto* r : {&b.flush_delay_us, &b.shards, &b.poll_interval_us}) {
    if (r->max > UINT32_MAX) {
      return Error(Errc::invalid_argument,
                   fmt::format("knob bounds max={} exceeds the 32-bit range of flush_delay_us, "
                               "shards and poll_interval_us: lower it",
                               r->max));
    }
  }
  if (b.shards.min == 0) {
    return Error(Errc::invalid_argument,
                 "knob bounds for shards start at 0: at least one shard "
                 "must stay active; set shards.min >= 1");
  }
  if ((b.poll_modes & 0b111) == 0) {
    return Error(Errc::invalid_argument,
                 "knob bounds allow no CQ polling mode: set at least one bit of poll_modes");
  }
  return {};
}

Status validate(const Knobs& k, const KnobBounds& b) {
  RDMAREPL_TRY(check_value(k.batch_bytes, b.batch_bytes, "batch_bytes"));
  RDMAREPL_TRY(check_value(k.flush_delay_us, b.flush_delay_us, "flush_delay_us"));
  RDMAREPL_TRY(check_value(k.shards, b.shards, "shards"));
  RDMAREPL_TRY(check_value(k.poll_interval_us, b.poll_interval_us, "poll_interval_us"));
  RDMAREPL_TRY(check_value(k.pool_bytes, b.pool_bytes, "pool_bytes"));
  if (static_cast<int>(k.poll_mode) >= kNumPollModes || !b.allows(k.poll_mode)) {
    return Error(Errc::invalid_argument,
                 fmt::format("polling mode {} is not allowed by the bounds (mask {:#x}); a "
                             "knob is busy, sleep or blocking, with its bit set in poll_modes",
                             to_string(k.poll_mode), b.poll_modes));
  }
  return {};
}

Knobs clamp(const Knobs& k, const KnobBounds& b) noexcept {
  Knobs r;
  r.batch_bytes = b.batch_bytes.snap(k.batch_bytes);
  r.flush_delay_us = static_cast<uint32_t>(b.flush_delay_us.snap(k.flush_delay_us));
  r.shards = static_cast<uint32_t>(b.shards.snap(k.shards));
  r.poll_interval_us = static_cast<uint32_t>(b.poll_interval_us.snap(k.poll_interval_us));
  r.pool_bytes = b.pool_bytes.snap(k.pool_bytes);
  r.poll_mode = k.poll_mode;
  if (static_cast<int>(r.poll_mode) >= kNumPollModes || !b.allows(r.poll_mode)) {
    for (int i = 0; i < kNumPollModes; ++i) {
      if (b.allows(static_cast<PollingMode>(i))) {
        r.poll_mode = static_cast<PollingMode>(i);
        break;
      }
    }
  }
  return r;
}

}  // namespace rdmarepl::tuning
