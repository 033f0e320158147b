// The follower's apply loop over one checked batch, typed on the user's Store so that
// Store::apply inlines into it: ReplicationChannel<Store> instantiates it once and hands the
// untyped engine a pointer to that instantiation (StoreHooks::apply_batch). A batch of small
// records then costs one indirect call, not one per record (docs/replication.md, "What is
// compiled"; benchmarks/replication/apply_bench.cc measures both).
#pragma once

#include <cstdint>

#include "rdmarepl/replication/detail/batch_format.h"
#include "rdmarepl/replication/record.h"
#include "rdmarepl/replication/record_group.h"
#include "rdmarepl/replication/store.h"

namespace rdmarepl::replication::detail {

// Applies, in order, the records of `batch` (accepted by parse_batch) whose seq is above
// `after`; records at or below it were applied before (a resend after a reconnect, or a
// checkpoint that already holds them) and are counted in `skipped`. Returns the last seq
// applied, or `after` when none was. A write group (records linked by kRecGroupNext, never
// split across batches) goes to Store::apply_group in one call when the store has it (only
// its records above `after`, should a store's durable position lie inside it).
//
// A BatchStore gets the batch's records above `after` in one apply_batch() call instead.
template <class S>
uint64_t apply_records(S& store, const BatchView& batch, uint64_t after, uint64_t& skipped) {
  RecordCursor cursor(batch);
  Record rec;
  uint64_t last = after;
  if constexpr (BatchStore<S>) {
    const uint64_t batch_last = batch.header.first_seq + batch.header.record_count - 1;
    if (batch.header.record_count == 0 || batch_last <= after) {
      skipped += batch.header.record_count;
      return after;
    }
    const std::byte* at = cursor.position();
    while (cursor.next(rec) && rec.seq <= after) {
      ++skipped;
      at = cursor.position();
    }
    const auto count = static_cast<uint32_t>(batch_last - rec.seq + 1);
    store.apply_batch(RecordGroup(at, batch.payload + batch.header.payload_len, batch.header.shard,
                                  count, rec.seq));
    return batch_last;
  }
  while (true) {
    [[maybe_unused]] const std::byte* at = cursor.position();
    if (!cursor.next(rec)) break;
    if (rec.seq <= last) {
      ++skipped;
      continue;
    }
    if constexpr (GroupStore<S>) {
      if (cursor.group_next()) {
        const uint64_t first = rec.seq;
        uint32_t count = 1;
        while (cursor.group_next() && cursor.next(rec)) ++count;
        store.apply_group(RecordGroup(at, cursor.position(), batch.header.shard, count, first));
        last = rec.seq;
        continue;
      }
    }
    store.apply(static_cast<const Record&>(rec));
    last = rec.seq;
  }
  return last;
}

}  // namespace rdmarepl::replication::detail
