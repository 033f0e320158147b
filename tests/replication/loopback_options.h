// ChannelOptions for the tests that run the engine over the in-process loopback transport
// (loopback_transport.h), shared so that they start from the same settings.
#pragma once

#include <chrono>
#include <cstdint>

#include "rdmarepl/replication/options.h"

namespace rdmarepl::test {

// Small rings and batches (256 KiB, 16 KiB), 32-deep queues, pollers that sleep 50 us when
// idle, reconnects every 20 ms (backing off to 200 ms) and a 100 us flush delay: quick on a loaded
// machine and under the sanitizers. The shard count, the value limit and the retained window are
// left to each test.
inline replication::ChannelOptions loopback_options() {
  using namespace std::chrono_literals;
  replication::ChannelOptions o;
  o.ring_bytes = 256 * 1024;
  o.batch_bytes = 16 * 1024;
  o.queue_depth = 32;
  o.polling = replication::PollingMode::sleep;
  o.poll_interval = 50us;
  o.reconnect_interval = 20ms;
  o.reconnect_max_interval = 200ms;  // connections the tests break keep coming back quickly
  o.flush_delay = 100us;
  return o;
}

// `o` for a follower named "follower" that listens on loopback port `port`. Only this
// process reaches the in-process fabric, so no key is needed to trust it.
inline replication::ChannelOptions loopback_follower(replication::ChannelOptions o, uint16_t port) {
  o.role = replication::Role::follower;
  o.listen = {"loopback", port};
  o.allow_unauthenticated = true;
  o.node_id = "follower";
  return o;
}

}  // namespace rdmarepl::test
