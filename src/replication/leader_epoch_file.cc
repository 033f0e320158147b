// The follower's leader epoch file (docs/wal_format.md, "Leader epoch file").
#include "leader_epoch_file.h"

#include <fcntl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "rdmarepl/core/byte_order.h"
#include "rdmarepl/core/crc32c.h"
#include "rdmarepl/wal/file.h"
#include "rdmarepl/wal/layout.h"

namespace rdmarepl::replication::detail {
namespace {
constexpr size_t kFixedBytes = 16;  // magic, version, node id length, epoch
constexpr size_t kCrcBytes = 4;
}  // namespace

std::vector<uint8_t> encode(const AcceptedLeader& l) {
  const size_t n = std::min(l.node_id.size(), kMaxEpochNodeIdBytes);
  std::vector<uint8_t> out(kFixedBytes + n + kCrcBytes);
  store_be32(out.data(), kLeaderEpochMagic);
  store_be16(out.data() + 4, kLeaderEpochVersion);
  store_be16(out.data() + 6, static_cast<uint16_t>(n));
  store_be64(out.data() + 8, l.epoch);
  std::copy_n(l.node_id.data(), n, out.data() + kFixedBytes);
  store_be32(out.data() + kFixedBytes + n,
             crc32c::mask(crc32c::value(out.data(), kFixedBytes + n)));
  return out;
}

bool decode(std::span<const uint8_t> b, AcceptedLeader& out, std::string& why) {
  if (b.size() < kFixedBytes + kCrcBytes) {
    why = fmt::format("{} bytes, shorter than the smallest file of {}", b.size(),
                      kFixedBytes + kCrcBytes);
    return false;
  }
  if (load_be32(b.data()) != kLeaderEpochMagic) {
    why = "bad magic number";
    return false;
  }
  if (load_be16(b.data() + 4) != kLeaderEpochVersion) {
    why = fmt::format("version {} (this build reads {})", load_be16(b.data() + 4),
                      kLeaderEpochVersion);
    return false;
  }
  const size_t n = load_be16(b.data() + 6);
  if (n > kMaxEpochNodeIdBytes || b.size() != kFixedBytes + n + kCrcBytes) {
    why = fmt::format("a node id of {} bytes in a file of {} bytes", n, b.size());
    return false;
  }
  if (load_be32(b.data() + kFixedBytes + n) !=
      crc32c::mask(crc32c::value(b.data(), kFixedBytes + n))) {
    why = "CRC mismatch";
    return false;
  }
  out.epoch = load_be64(b.data() + 8);
  out.node_id.assign(reinterpret_cast<const char*>(b.data() + kFixedBytes), n);
  return true;
}

Result<std::optional<AcceptedLeader>> load_accepted_leader(const std::string& dir) {
  const std::string path = wal::join_path(dir, kLeaderEpochFile);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<AcceptedLeader>();
  auto bytes = wal::read_whole_file(path);
  if (!bytes.ok()) return std::move(bytes).error();
  AcceptedLeader l;
  std::string why;
  if (!decode(*bytes, l, why))
    return Error(Errc::corrupt,
                 fmt::format("{} is damaged ({}): it holds the highest leader epoch this "
                             "follower accepted. Restore it from a backup, or delete it to "
                             "forget the epoch (the next leader with any epoch is accepted)",
                             path, why));
  return std::optional<AcceptedLeader>(std::move(l));
}

Status store_accepted_leader(const std::string& dir, const AcceptedLeader& l) {
  const std::string path = wal::join_path(dir, kLeaderEpochFile);
  const std::string tmp = path + ".tmp";
  const std::vector<uint8_t> bytes = encode(l);
  {
    auto f = wal::File::open(tmp, O_WRONLY | O_CREAT | O_TRUNC);
    if (!f.ok()) return std::move(f).error();
    RDMAREPL_TRY(f->write_at(0, bytes));
    RDMAREPL_TRY(f->sync());
    RDMAREPL_TRY(f->close());
  }
  RDMAREPL_TRY(wal::rename_file(tmp, path));
  return wal::sync_dir(dir);
}

}  // namespace rdmarepl::replication::detail
