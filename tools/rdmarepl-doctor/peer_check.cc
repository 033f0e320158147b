#include "peer_check.h"

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/transport/transport.h"
#include "replication/hello.h"
#include "replication/probe.h"
#include "replication/transport_select.h"

namespace rdmarepl::doctor {
namespace {

using namespace transport;
constexpr uint32_t kImm = 0x0d0c7e57;

// A buffer registered for remote writes, and the transport that owns it.
struct EchoBuffer {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(kEchoBytes, 0);
  std::unique_ptr<MemoryRegion> mr;
};

Result<EchoBuffer> make_buffer(Transport& t) {
  EchoBuffer b;
  auto mr =
      t.register_memory(b.bytes.data(), b.bytes.size(), Access::local_write | Access::remote_write);
  if (!mr) return std::move(mr).error();
  b.mr = std::move(*mr);
  return b;
}

WriteRequest write_to_peer(const EchoBuffer& b, const Connection& c, uint32_t len, uint32_t imm) {
  WriteRequest w;
  w.wr_id = imm;
  w.local_addr = b.bytes.data();
  w.length = len;
  w.lkey = b.mr->region().keys.lkey;
  w.remote_addr = c.peer().regions.front().addr;
  w.rkey = c.peer().regions.front().rkey;
  w.imm = imm;
  return w;
}

// Serves one connection: every write-with-immediate is written back with imm + 1.
void serve(Connection& c, EchoBuffer& b) {
  std::array<Completion, 8> wc;
  for (;;) {
    (void)c.wait(std::chrono::milliseconds(100));
    const size_t n = c.poll(wc);
    for (size_t i = 0; i < n; ++i) {
      if (wc[i].status != WcStatus::success) {
        std::fprintf(stderr, "rdmarepl-doctor: connection from %s ended: %s\n",
                     c.peer().address.c_str(), failure_reason(c, wc[i].status).c_str());
        return;
      }
      if (wc[i].opcode != WcOpcode::recv_rdma_with_imm) continue;
      const WriteRequest w = write_to_peer(b, c, wc[i].byte_len, wc[i].imm + 1);
      if (c.post_recvs(1) != PostStatus::ok || c.post_writes({&w, 1}) != PostStatus::ok) {
        std::fprintf(stderr, "rdmarepl-doctor: echo to %s failed: %s\n", c.peer().address.c_str(),
                     c.error().message().c_str());
        return;
      }
    }
  }
}

// What to do about a connection that failed.
std::string connect_advice(const Error& e) {
  if (e.is(Errc::auth_failed))
    return "give the peer's pre-shared key (--key-file with the follower's "
           "ChannelOptions::pre_shared_key), or no key if it has none";
  return "check host, port and firewall; the peer must be a follower's channel or "
         "`rdmarepl-doctor --listen`";
}

// The probe of a follower's channel whose Hello `hello` arrived on `link`.
void probe_follower(Connection& link, std::string_view transport, Deadline deadline, Check& c) {
  const PeerInfo& info = link.peer();
  auto hello = replication::detail::parse_follower_hello(info.app_data, info.address);
  if (!hello) {
    c.detail = fmt::format("connected over {}; {}", transport, hello.error().message());
    c.advice = "run the rdmarepl-doctor of the follower's build";
    return;
  }
  const auto t0 = Clock::now();
  const std::string why = replication::detail::probe_round_trip(link, kImm, deadline);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
  if (!why.empty()) {
    c.detail = fmt::format("connected to follower '{}' over {}; probe failed: {}", info.node_id,
                           transport, why);
    c.advice = "see the follower's log and docs/TROUBLESHOOTING.md";
    return;
  }
  c.verdict = Verdict::pass;
  c.detail = fmt::format(
      "write-with-immediate round trip to follower '{}' ({} shards) over {} in {} us (a probe: "
      "its store and sessions untouched)",
      info.node_id, hello->shard_count, transport, us);
}

}  // namespace

Result<std::string> read_key_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(Errc::invalid_argument, "--key-file " + path + " cannot be read");
  std::string key((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!key.empty() && (key.back() == '\n' || key.back() == '\r')) key.pop_back();
  if (key.empty())
    return Error(Errc::invalid_argument,
                 "--key-file " + path + " is empty; put the pre-shared key in it");
  return key;
}

Result<Endpoint> parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    return Error(Errc::invalid_argument,
                 fmt::format("'{}' is not host:port (e.g. 10.0.0.2:7000)", text));
  Endpoint e;
  e.host = text.substr(0, colon);
  try {
    size_t used = 0;
    const unsigned long port = std::stoul(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1 || port > 65535) throw std::out_of_range("port");
    e.port = static_cast<uint16_t>(port);
  } catch (const std::exception&) {
    return Error(Errc::invalid_argument,
                 fmt::format("'{}' has no valid port (0..65535) after the last ':'", text));
  }
  return e;
}

Check check_peer(const Endpoint& peer, const PeerOptions& options) {
  Check c{Verdict::fail, "peer " + peer.to_string(), "", ""};
  auto t = replication::select_transport(options.transport);
  if (!t) {
    c.detail = t.error().message();
    c.advice = "choose a transport this node has (--transport tcp)";
    return c;
  }
  auto in = make_buffer(**t);
  auto out = make_buffer(**t);
  if (!in || !out) {
    c.detail = (in ? out.error() : in.error()).message();
    c.advice = "see the memlock check";
    return c;
  }
  for (uint32_t i = 0; i < kEchoBytes; ++i) out->bytes[i] = static_cast<uint8_t>(i * 31 + 7);
  ConnectionOptions co;
  co.node_id = "rdmarepl-doctor";
  co.pre_shared_key = options.pre_shared_key;
  co.regions = {in->mr->remote()};
  co.initial_recvs = 1;
  co.connect_timeout = options.timeout;
  co.app_data = replication::detail::encode_probe_hello();
  auto conn = (*t)->connect(peer, co);
  if (!conn) {
    c.detail = conn.error().message();
    c.advice = connect_advice(conn.error());
    return c;
  }
  Connection& link = **conn;
  if (!link.peer().app_data.empty()) {
    probe_follower(link, (*t)->name(), Deadline::after(options.timeout), c);
    return c;
  }
  if (link.peer().regions.empty() || link.peer().regions.front().length < kEchoBytes) {
    c.detail = fmt::format("connected over {}, but '{}' offers no echo buffer", (*t)->name(),
                           link.peer().node_id);
    c.advice = "point --peer at a `rdmarepl-doctor --listen`";
    return c;
  }
  const WriteRequest w = write_to_peer(*out, link, kEchoBytes, kImm);
  const auto t0 = Clock::now();
  std::string why = link.post_writes({&w, 1}) == PostStatus::ok
                        ? replication::detail::await_imm(
                              link, kImm + 1, Deadline::after(options.timeout),
                              "no echo arrived in time: is the peer a `rdmarepl-doctor --listen`?")
                        : link.error().message();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
  if (why.empty() && in->bytes != out->bytes) why = "the echo arrived but its bytes differ";
  if (!why.empty()) {
    c.detail = fmt::format("connected over {}; round trip failed: {}", (*t)->name(), why);
    c.advice = "see docs/TROUBLESHOOTING.md for the message";
    return c;
  }
  c.verdict = Verdict::pass;
  c.detail = fmt::format("{}-byte write-with-immediate round trip to '{}' over {} in {} us",
                         kEchoBytes, link.peer().node_id, (*t)->name(), us);
  return c;
}

Status run_echo_listener(const Endpoint& where, const PeerOptions& options, uint32_t connections) {
  auto t = replication::select_transport(options.transport);
  if (!t) return std::move(t).error();
  auto l = (*t)->listen(where);
  if (!l) return std::move(l).error();
  std::printf("listening on %s over %s\n", (*l)->local_endpoint().to_string().c_str(),
              std::string((*t)->name()).c_str());
  std::fflush(stdout);
  for (uint32_t served = 0; connections == 0 || served < connections;) {
    auto buf = make_buffer(**t);
    if (!buf) return std::move(buf).error();
    ConnectionOptions so;
    so.node_id = "rdmarepl-doctor-listener";
    so.pre_shared_key = options.pre_shared_key;
    so.regions = {buf->mr->remote()};
    so.initial_recvs = 4;
    auto conn = (*l)->accept(so, std::chrono::hours(24));
    if (!conn) {
      std::fprintf(stderr, "rdmarepl-doctor: %s\n", conn.error().message().c_str());
      continue;
    }
    serve(**conn, *buf);
    ++served;
  }
  return ok_status();
}

}  // namespace rdmarepl::doctor
