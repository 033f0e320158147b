// How completions are polled: the channel's poller setting (ChannelOptions::polling) and the
// tuner's polling knob (Knobs::poll_mode) are the same value.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace rdmarepl::tuning {

// The values of busy, sleep and blocking are also the tuner's feature encoding and bit
// positions in KnobBounds::poll_modes (models/ were trained on them): never renumber.
enum class PollingMode : uint8_t {
  busy = 0,      // spin on progress(); lowest latency, one core per poller
  sleep = 1,     // sleep `poll_interval` whenever a round found nothing to do
  blocking = 2,  // block on the completion channel (up to `poll_interval`) when a round
                 // was idle; cheapest, adds a wake-up
  manual = 3,    // no poller thread: the store calls progress() from its own event loop.
                 // Never a knob value: a tuner only moves between the modes below
};
// busy, sleep and blocking: the modes a tuner may choose.
inline constexpr int kNumPollModes = 3;

constexpr std::string_view to_string(PollingMode m) noexcept {
  switch (m) {
    case PollingMode::busy:
      return "busy";
    case PollingMode::sleep:
      return "sleep";
    case PollingMode::blocking:
      return "blocking";
    case PollingMode::manual:
      return "manual";
  }
  return "?";
}

inline std::span<const PollingMode> enum_values(PollingMode) noexcept {
  static constexpr PollingMode kAll[] = {PollingMode::busy, PollingMode::sleep,
                                         PollingMode::blocking, PollingMode::manual};
  return kAll;
}

}  // namespace rdmarepl::tuning
