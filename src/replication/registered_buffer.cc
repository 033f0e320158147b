#include "registered_buffer.h"

#include <fmt/format.h>

namespace rdmarepl::replication::detail {

Result<RegisteredBuffer> RegisteredBuffer::create(transport::Transport& transport, size_t bytes,
                                                  transport::Access access, std::string_view what,
                                                  memory::Counters* counters) {
  RegisteredBuffer b;
  b.registrar_ = std::make_unique<memory::Registrar>(memory::transport_registrar(transport));
  memory::ArenaOptions options;
  // A 2 MiB huge page per 64-byte ack target would waste memory; rings and windows gain
  // from fewer TLB and NIC translation entries.
  options.huge_pages = bytes >= memory::kHugePageSize;
  options.access = access;
  auto arena = memory::Arena::create(bytes, options, *b.registrar_, counters);
  if (!arena.ok())
    return Error(arena.error().code(), fmt::format("allocating the {} ({} bytes): {}", what, bytes,
                                                   arena.error().message()));
  b.arena_ = std::move(arena).value();
  b.size_ = bytes;
  return b;
}

}  // namespace rdmarepl::replication::detail
