// Names for the library's threads, as top -H, perf, gdb and /proc/<pid>/task/<tid>/comm show
// them. A name is "rr" (rdmarepl), the channel's role where the thread belongs to one ("L"
// leader, "F" follower), a dash and what the thread does, with a worker index where there are
// several: "rrL-poll0", "rrF-accept", "rr-walflush". Linux keeps 15 characters; longer names
// are cut.
#pragma once

#include <string_view>

#include "rdmarepl/replication/options.h"

namespace rdmarepl::core {

// Names the calling thread. Naming is best effort: a failure changes nothing else.
void name_this_thread(std::string_view name) noexcept;

// "rrL-" + what or "rrF-" + what, with index appended when it is not negative.
void name_this_thread(replication::Role role, std::string_view what, int index = -1) noexcept;

}  // namespace rdmarepl::core
