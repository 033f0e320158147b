#include "rdmarepl/core/error.h"

#include <catch2/catch.hpp>

#include <cerrno>

#include "rdmarepl/core/result.h"

using namespace rdmarepl;

namespace {
Result<int> half(int v) {
  if (v % 2) return Error(Errc::invalid_argument, "odd value: pass an even number");
  return v / 2;
}
Status chain(int v) {
  RDMAREPL_TRY(half(v));
  return {};
}
}  // namespace

TEST_CASE("error codes belong to the rdmarepl category", "[core][error]") {
  Error e(Errc::misaligned, "address 0x1001 is not 4096-aligned: align the region");
  CHECK(e.code().category().name() == std::string("rdmarepl"));
  CHECK(e.is(Errc::misaligned));
  CHECK_FALSE(e.is(Errc::too_large));
  CHECK(e.to_string() ==
        "address 0x1001 is not 4096-aligned: align the region "
        "(rdmarepl: misaligned address or length)");
  std::error_code ec = Errc::timeout;
  CHECK(ec.message() == "timed out");
}

TEST_CASE("errno errors carry remediation advice", "[core][error]") {
  auto e = errno_error(ENOMEM, "ibv_reg_mr(64 MiB)");
  CHECK(e.code() == std::error_code(ENOMEM, std::generic_category()));
  CHECK(e.message().find("raise the registration (MR) cache") != std::string::npos);
  CHECK(errno_error(ETIMEDOUT, "x").message().find("ack_timeout") != std::string::npos);
  CHECK(errno_error(EIO, "x").message().find("firmware") != std::string::npos);
  CHECK(errno_error(EINVAL, "x").message().find("huge pages") != std::string::npos);
  CHECK(errno_advice(EXDEV).empty());
}

TEST_CASE("Result holds a value or an error and TRY propagates", "[core][error]") {
  auto r = half(8);
  REQUIRE(r.ok());
  CHECK(*r == 4);
  auto bad = half(3);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().is(Errc::invalid_argument));
  CHECK(chain(2).ok());
  auto s = chain(5);
  REQUIRE_FALSE(s.ok());
  CHECK(s.error().message() == "odd value: pass an even number");
}
