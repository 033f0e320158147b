// Verbs transport streaming and latency on the device the VM harness created (rxe0), for
// comparison with perftest's ib_write_bw / ib_write_lat in the same VM boot (run.sh prints
// the ratios). Both ends live in this process and one thread drives both, like a loopback
// perftest run.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <future>
#include <memory>
#include <vector>

#include "transport/verbs/verbs_transport.h"

namespace {

using namespace rdmarepl::transport;

constexpr size_t kRingBytes = 16 << 20;
constexpr uint32_t kBatch = 16;  // writes per iteration, the last one signaled

struct Env {
  std::unique_ptr<verbs::VerbsTransport> transport;
  std::vector<uint8_t> ring = std::vector<uint8_t>(kRingBytes);
  std::vector<uint8_t> src = std::vector<uint8_t>(kRingBytes);
  std::unique_ptr<MemoryRegion> ring_mr, src_mr;
  std::unique_ptr<Listener> listener;
  std::unique_ptr<Connection> client, server;
  RemoteRegion dst;

  Env() {
    verbs::VerbsOptions o;
    if (const char* d = std::getenv("RDMAREPL_RXE_DEVICE")) o.device.name = d;
    auto t = verbs::VerbsTransport::create(o);
    if (!t) throw std::runtime_error(t.error().to_string());
    transport = std::move(*t);
    ring_mr =
        transport
            ->register_memory(ring.data(), ring.size(), Access::local_write | Access::remote_write)
            .value();
    src_mr = transport->register_memory(src.data(), src.size(), Access::local_write).value();
    listener = transport->listen(Endpoint{"127.0.0.1", 0}).value();
    ConnectionOptions so, co;
    so.regions = {ring_mr->remote()};
    so.connect_timeout = co.connect_timeout = std::chrono::seconds(60);
    auto accepted = std::async(std::launch::async,
                               [&] { return listener->accept(so, std::chrono::seconds(60)); });
    auto c = transport->connect(listener->local_endpoint(), co);
    auto s = accepted.get();
    if (!c || !s) throw std::runtime_error("connect failed");
    client = std::move(*c);
    server = std::move(*s);
    dst = client->peer().regions[0];
    (void)server->post_recvs(1024);
  }
};

Env& env() {
  static Env e;
  return e;
}

// Drains both ends until the client's signaled completion arrived; re-posts receives.
bool drain(Env& e, size_t want_recv) {
  Completion buf[64];
  size_t recv = 0;
  bool sent = false;
  while (!sent || recv < want_recv) {
    size_t n = e.client->poll(buf);
    for (size_t i = 0; i < n; ++i) {
      if (buf[i].status != WcStatus::success) return false;
      sent = true;
    }
    n = e.server->poll(buf);
    recv += n;
    if (n > 0) (void)e.server->post_recvs(static_cast<uint32_t>(n));
    if (!e.client->healthy()) return false;
  }
  return true;
}

void BM_VerbsWriteBandwidth(benchmark::State& state) {
  Env& e = env();
  const auto size = static_cast<uint32_t>(state.range(0));
  std::vector<WriteRequest> ws(kBatch);
  uint64_t off = 0;
  for (auto _ : state) {
    for (uint32_t i = 0; i < kBatch; ++i) {
      if (off + size > kRingBytes) off = 0;
      ws[i] = WriteRequest{
          i, e.src.data() + off, size, e.src_mr->region().keys.lkey, e.dst.addr + off, e.dst.rkey,
          i, i + 1 == kBatch};
      off += size;
    }
    if (e.client->post_writes(ws) != PostStatus::ok || !drain(e, kBatch)) {
      state.SkipWithError("verbs write failed");
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kBatch * size);
}
BENCHMARK(BM_VerbsWriteBandwidth)->Arg(4096)->Arg(65536)->UseRealTime()->MinTime(2.0);

// One signaled write, until the responder has its completion and the requester its own.
void BM_VerbsWriteLatency(benchmark::State& state) {
  Env& e = env();
  const auto size = static_cast<uint32_t>(state.range(0));
  for (auto _ : state) {
    WriteRequest w{1,          e.src.data(), size, e.src_mr->region().keys.lkey,
                   e.dst.addr, e.dst.rkey,   1,    true};
    if (e.client->post_writes({&w, 1}) != PostStatus::ok || !drain(e, 1)) {
      state.SkipWithError("verbs write failed");
      break;
    }
  }
}
BENCHMARK(BM_VerbsWriteLatency)->Arg(64)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
