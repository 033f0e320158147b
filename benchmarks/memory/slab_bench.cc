// Slab allocate+free pair against malloc+free of the same size, for every size class, in
// the same run. After the usual table it prints one line per class with the ratio
// malloc_ns / slab_ns (the target is >= 2 at every class), on CPU time (the thread's own
// time: on a shared machine wall time also counts the time it spent descheduled) and, for
// reference, on wall time.
//
//   rdmarepl-bench-memory [--benchmark_min_time=0.2] [--benchmark_repetitions=3]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "rdmarepl/core/log.h"
#include "rdmarepl/memory/slab_pool.h"

namespace {

using namespace rdmarepl::memory;

SlabPool& pool() {
  static std::unique_ptr<SlabPool> p = [] {
    PoolOptions o;
    o.pool_bytes = size_t{64} << 20;
    o.arena_bytes = size_t{32} << 20;
    auto created = SlabPool::create(o, local_registrar());
    if (!created.ok()) {
      std::fprintf(stderr, "cannot create the pool: %s\n", created.error().to_string().c_str());
      std::exit(1);
    }
    return std::move(*created);
  }();
  return *p;
}

void slab_pair(benchmark::State& state, size_t size) {
  SlabPool& p = pool();
  for (auto _ : state) {
    Buffer b = p.alloc(size);
    benchmark::DoNotOptimize(b.data());
  }
  if (p.stats().failed_allocations != 0) state.SkipWithError("slab allocation failed");
}

void malloc_pair(benchmark::State& state, size_t size) {
  for (auto _ : state) {
    void* m = std::malloc(size);
    benchmark::DoNotOptimize(m);
    std::free(m);
  }
}

// Console output as usual, plus the per-run time of every benchmark for the summary.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      if (r.error_occurred) continue;
      // With repetitions keep the median; otherwise the single run.
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      const std::string& name = r.run_name.function_name;
      auto slash = name.find('/');
      if (slash == std::string::npos) continue;
      auto size = std::stoul(name.substr(slash + 1));
      // Time unit is ns.
      Times t{r.GetAdjustedCPUTime(), r.GetAdjustedRealTime()};
      (name.compare(0, slash, "slab") == 0 ? slab_ : malloc_)[size] = t;
    }
  }
  void summary() const {
    std::printf("\nsize_class  slab_cpu_ns  malloc_cpu_ns  malloc/slab(cpu)  malloc/slab(wall)\n");
    double worst = 1e9;
    for (const auto& [size, slab] : slab_) {
      auto m = malloc_.find(size);
      if (m == malloc_.end() || slab.cpu <= 0 || slab.wall <= 0) continue;
      double ratio = m->second.cpu / slab.cpu;
      worst = std::min(worst, ratio);
      std::printf("%10zu  %11.2f  %13.2f  %15.2fx  %16.2fx\n", size, slab.cpu, m->second.cpu, ratio,
                  m->second.wall / slab.wall);
    }
    if (worst < 1e9) std::printf("lowest ratio malloc/slab (cpu): %.2fx (target >= 2x)\n", worst);
  }

 private:
  struct Times {
    double cpu;
    double wall;
  };
  std::map<size_t, Times> slab_;
  std::map<size_t, Times> malloc_;
};

}  // namespace

int main(int argc, char** argv) {
  rdmarepl::log::set_level(rdmarepl::log::Level::warn);  // no huge-page notice in the table
  for (unsigned c = 0; c < kNumClasses; ++c) {
    const size_t size = class_size(c);
    benchmark::RegisterBenchmark(("slab/" + std::to_string(size)).c_str(), slab_pair, size);
    benchmark::RegisterBenchmark(("malloc/" + std::to_string(size)).c_str(), malloc_pair, size);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.summary();
  benchmark::Shutdown();
  return 0;
}
