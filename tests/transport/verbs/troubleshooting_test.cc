// The verbs errors docs/TROUBLESHOOTING.md quotes, produced for real on Soft-RoCE: a GID
// index out of range, ibv_reg_mr refused for a range past the end of the address space
// (EINVAL) and by the locked-memory limit (ENOMEM), a write that
// finds no receive (RNR retry exceeded) and a write to a queue pair that stopped answering
// (retry exceeded). Each message is printed as "TROUBLESHOOTING: <message>";
// tests/rxe/troubleshooting.sh checks the guide's lines against them. Hidden tag: the
// memlock case drops CAP_IPC_LOCK for the rest of the process.
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "pair.h"

namespace rdmarepl::transport::verbs::test {
namespace {

void show(const std::string& message) {
  std::printf("TROUBLESHOOTING: %s\n", message.c_str());
  std::fflush(stdout);
}

// Drops CAP_IPC_LOCK from the effective set, so RLIMIT_MEMLOCK applies as to a store.
bool drop_ipc_lock() {
  __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct d[2] = {};
  if (::syscall(SYS_capget, &h, d) != 0) return false;
  d[0].effective &= ~(1u << CAP_IPC_LOCK);
  return ::syscall(SYS_capset, &h, d) == 0;
}

// Writes 64 bytes from the client and returns its first failed completion's status.
WcStatus write_and_fail(Pair& p, Transport& t, std::vector<uint8_t>& src) {
  auto mr = t.register_memory(src.data(), src.size(), Access::local_write);
  REQUIRE(mr);
  const RemoteRegion dst = p.client->peer().regions.at(0);
  WriteRequest w{7, src.data(), 64, (*mr)->region().keys.lkey, dst.addr, dst.rkey, 1, true};
  REQUIRE(p.client->post_writes({&w, 1}) == PostStatus::ok);
  for (int i = 0; i < 3000; ++i) {
    auto got = reap(*p.client, 1);
    for (const auto& c : got)
      if (c.status != WcStatus::success) return c.status;
  }
  return WcStatus::success;
}

}  // namespace

TEST_CASE("troubleshooting: the verbs errors the guide quotes", "[.troubleshooting]") {
  auto opts = vm_options();
  opts.device.gid_index = 100000;
  auto bad_gid = Device::open(opts.device);
  REQUIRE_FALSE(bad_gid.ok());
  show(bad_gid.error().message());

  auto t = make_transport();
  std::vector<uint8_t> target(4096), src(4096);
  auto target_mr =
      t->register_memory(target.data(), target.size(), Access::local_write | Access::remote_write);
  REQUIRE(target_mr);
  ConnectionOptions so;
  so.regions = {(*target_mr)->remote()};
  {
    auto p = connect(*t, *t, so);  // no receive posted at the server
    CHECK(write_and_fail(p, *t, src) == WcStatus::rnr_retry_exceeded);
    show(p.client->error().message());
  }
  {
    auto p = connect(*t, *t, so);
    REQUIRE(p.server->post_recvs(4) == PostStatus::ok);
    // The responder's QP goes to RESET: it neither answers nor NAKs, as a vanished host.
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RESET;
    REQUIRE(ibv_modify_qp(p.s().qp(), &a, IBV_QP_STATE) == 0);
    CHECK(write_and_fail(p, *t, src) == WcStatus::retry_exceeded);
    show(p.client->error().message());
  }
  // A range that runs past the end of the address space: the kernel refuses to pin it
  // (ib_umem_get's overflow check) with EINVAL, through the library's registration path.
  void* const last_page = reinterpret_cast<void*>(~uintptr_t{0} & ~uintptr_t{4095});
  auto wrapped = t->register_memory(last_page, 8192, Access::local_write);
  REQUIRE_FALSE(wrapped.ok());
  CHECK(wrapped.error().message().find("Invalid argument") != std::string::npos);
  show(wrapped.error().message());

  REQUIRE(drop_ipc_lock());
  rlimit small{64 * 1024, 64 * 1024};
  REQUIRE(::setrlimit(RLIMIT_MEMLOCK, &small) == 0);
  std::vector<uint8_t> big(4 << 20, 1);
  auto refused = t->register_memory(big.data(), big.size(), Access::local_write);
  REQUIRE_FALSE(refused.ok());
  show(refused.error().message());
}

}  // namespace rdmarepl::transport::verbs::test
