// Creates a ReplicationChannel over `store` with the options' own transport, or fails the
// test case with the error's message.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "rdmarepl/replication/channel.h"

namespace rdmarepl::test {

template <class Store>
std::unique_ptr<replication::ReplicationChannel<Store>> open(const replication::ChannelOptions& o,
                                                             Store& store) {
  auto ch = replication::ReplicationChannel<Store>::create(o, store);
  INFO((ch.ok() ? std::string() : ch.error().message()));
  REQUIRE(ch.ok());
  return std::move(ch).value();
}

}  // namespace rdmarepl::test
