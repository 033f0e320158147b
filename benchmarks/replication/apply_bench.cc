// The follower's apply cost per record: the loop the channel runs over a checked batch.
//
//   inlined:  detail::apply_records<Store>, what ReplicationChannel<Store> instantiates: the
//             record cursor and Store::apply inline into one loop, one indirect call per batch.
//   per_call: the shape the engine had before: an out-of-line cursor step and one indirect
//             call through a `void (*)(void*, const Record&)` hook per record.
//
// Two stores: `sum` (apply folds the record into a few integers: the loop's own cost) and
// `map` (apply assigns into a std::unordered_map whose keys repeat: a store that does work).
// Run with --benchmark_repetitions=N --benchmark_enable_random_interleaving=true; the time
// per iteration is per batch of kRecords records.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <vector>

#include "rdmarepl/replication/detail/apply_records.h"

namespace {

using rdmarepl::replication::BatchBuilder;
using rdmarepl::replication::BatchError;
using rdmarepl::replication::BatchView;
using rdmarepl::replication::Op;
using rdmarepl::replication::Record;
using rdmarepl::replication::RecordCursor;

constexpr size_t kRecords = 64;

struct SumStore {
  uint64_t bytes = 0;
  uint64_t last_seq = 0;
  void apply(const Record& r) {
    bytes += r.key.size() + r.value.size() + static_cast<uint8_t>(r.value.empty() ? 0 : r.value[0]);
    last_seq = r.seq;
  }
};

struct MapStore {
  std::unordered_map<std::string, std::string> data;
  void apply(const Record& r) {
    if (r.op == Op::put)
      data[std::string(r.key)].assign(r.value.data(), r.value.size());
    else
      data.erase(std::string(r.key));
  }
};

// One batch of kRecords puts (16-byte keys from a set of 32, `value_len`-byte values).
struct Batch {
  std::vector<std::byte> bytes;
  BatchView view;
  explicit Batch(size_t value_len) : bytes(128 * 1024) {
    BatchBuilder b;
    b.start(bytes.data(), bytes.size(), 0, 1);
    const std::string value(value_len, 'v');
    char key[17];
    for (size_t i = 0; i < kRecords; ++i) {
      std::snprintf(key, sizeof key, "key-%012zu", i % 32);
      b.add(Op::put, std::string_view(key, 16), value, 1000 + i);
    }
    (void)b.seal();
    if (rdmarepl::replication::parse_batch(bytes, view) != BatchError::ok) std::abort();
  }
};

// The old engine's pieces: the cursor step out of line, the hook called through a pointer.
[[gnu::noinline]] bool next_out_of_line(RecordCursor& c, Record& r) noexcept {
  return c.next(r);
}
using ApplyFn = void (*)(void* store, const Record& record);
template <class S>
void apply_thunk(void* store, const Record& record) {
  static_cast<S*>(store)->apply(record);
}
template <class S>
[[gnu::noinline]] uint64_t apply_per_call(ApplyFn fn, void* store, const BatchView& batch,
                                          uint64_t after, uint64_t& skipped) {
  RecordCursor cursor(batch);
  Record rec;
  uint64_t last = after;
  while (next_out_of_line(cursor, rec)) {
    if (rec.seq <= last) {
      ++skipped;
      continue;
    }
    fn(store, rec);
    last = rec.seq;
  }
  return last;
}

// What the channel stores in StoreHooks::apply_batch for S.
template <class S>
uint64_t apply_batch_thunk(void* store, const BatchView& batch, uint64_t after, uint64_t& skipped) {
  return rdmarepl::replication::detail::apply_records(*static_cast<S*>(store), batch, after,
                                                      skipped);
}
using ApplyBatchFn = uint64_t (*)(void*, const BatchView&, uint64_t, uint64_t&);

template <class S>
void BM_inlined(benchmark::State& state) {
  const Batch batch(static_cast<size_t>(state.range(0)));
  S store;
  // Through a pointer, as the engine calls it (the compiler must not see the target).
  ApplyBatchFn fn = &apply_batch_thunk<S>;
  benchmark::DoNotOptimize(fn);
  for (auto _ : state) {
    uint64_t skipped = 0;
    benchmark::DoNotOptimize(fn(&store, batch.view, 0, skipped));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kRecords));
}

template <class S>
void BM_per_call(benchmark::State& state) {
  const Batch batch(static_cast<size_t>(state.range(0)));
  S store;
  ApplyFn fn = &apply_thunk<S>;
  benchmark::DoNotOptimize(fn);
  for (auto _ : state) {
    uint64_t skipped = 0;
    benchmark::DoNotOptimize(apply_per_call<S>(fn, &store, batch.view, 0, skipped));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kRecords));
}

BENCHMARK_TEMPLATE(BM_inlined, SumStore)->Arg(64)->Arg(1024);
BENCHMARK_TEMPLATE(BM_per_call, SumStore)->Arg(64)->Arg(1024);
BENCHMARK_TEMPLATE(BM_inlined, MapStore)->Arg(64)->Arg(1024);
BENCHMARK_TEMPLATE(BM_per_call, MapStore)->Arg(64)->Arg(1024);

}  // namespace

BENCHMARK_MAIN();
