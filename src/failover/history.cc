#include "history.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace rdmarepl::failover::detail {

uint64_t History::epoch_at(uint64_t seq) const noexcept {
  uint64_t e = 0;
  for (const auto& [epoch, first] : segments)
    if (first <= seq && seq != 0) e = epoch;
  return e;
}

uint64_t History::first_difference(const History& other, uint64_t upto) const {
  // epoch_at() changes only where a segment starts: those are the seqs to compare.
  std::vector<uint64_t> starts = {1};
  for (const auto& s : segments) starts.push_back(s.second);
  for (const auto& s : other.segments) starts.push_back(s.second);
  std::sort(starts.begin(), starts.end());
  for (uint64_t seq : starts)
    if (seq >= 1 && seq <= upto && epoch_at(seq) != other.epoch_at(seq)) return seq;
  return 0;
}

std::string History::to_json() const {
  nlohmann::json j = {
      {"version", 1}, {"was_leader", was_leader}, {"segments", nlohmann::json::array()}};
  for (const auto& [epoch, first] : segments) j["segments"].push_back({epoch, first});
  return j.dump();
}

Result<History> History::from_json(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.value("version", 0) != 1)
      return Error(Errc::corrupt,
                   fmt::format("history version {} is not 1", j.value("version", 0)));
    History h;
    h.was_leader = j.value("was_leader", false);
    for (const auto& s : j.at("segments"))
      h.segments.emplace_back(s.at(0).get<uint64_t>(), s.at(1).get<uint64_t>());
    return h;
  } catch (const nlohmann::json::exception& e) {
    return Error(Errc::corrupt, fmt::format("history is not valid: {}", e.what()));
  }
}

Result<History> History::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return History{};
  std::stringstream ss;
  ss << in.rdbuf();
  auto h = from_json(ss.str());
  if (!h)
    return Error(Errc::corrupt, fmt::format("{}: {}; remove the node's directory to resync it "
                                            "from the group",
                                            path, h.error().message()));
  return h;
}

Status History::save(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  const std::string text = to_json();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error(errno, fmt::format("creating {}", tmp));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) return errno_error(err, fmt::format("writing {}", tmp));
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return errno_error(errno, fmt::format("renaming {} to {}", tmp, path));
  return ok_status();
}

}  // namespace rdmarepl::failover::detail
