// Checks run before registering memory the memory layer did not map itself (the store's own
// mmap'd regions). A bare EINVAL from ibv_reg_mr says nothing; these say what is wrong.
#pragma once

#include <cstddef>

#include "rdmarepl/core/result.h"

namespace rdmarepl::memory {

// Fails with
//  - Errc::invalid_argument for a null address or a zero length,
//  - Errc::misaligned if `addr` or `length` is not a multiple of 4 KiB (the message names the
//    address or length and the required alignment),
//  - Errc::too_large if `length` exceeds `max_size` (the device's max_mr_size; both sizes are
//    named),
//  - Errc::not_mapped if any page of [addr, addr + length) is not mapped in this process
//    (the range and the first unmapped page are named).
Status check_external_region(const void* addr, size_t length, size_t max_size);

}  // namespace rdmarepl::memory
