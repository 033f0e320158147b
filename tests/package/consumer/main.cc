// A program outside the project that uses the installed package.
#include <cstdio>
#include <cstring>

#include "rdmarepl/core/crc32c.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/features.h"

int main() {
  const char* check = "123456789";
  uint32_t crc = rdmarepl::crc32c::value(check, std::strlen(check));
  rdmarepl::Status s = rdmarepl::Error(rdmarepl::Errc::timeout, "example");
  std::printf("crc32c=%08x verbs=%d status=%s\n", crc, RDMAREPL_HAVE_VERBS,
              s.error().to_string().c_str());
  return crc == 0xe3069283u && !s.ok() ? 0 : 1;
}
