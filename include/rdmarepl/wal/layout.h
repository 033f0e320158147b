// File names inside a WAL directory:
//   wal-<segment number, 20 digits>.log          segments, read in number order
//   checkpoint-<seq, 20 digits>.ckpt             checkpoints, newest = highest seq
//   checkpoint-<seq, 20 digits>.ckpt.tmp         a checkpoint being written (removed on open)
// Fixed-width decimal numbers make the lexical order the numeric order.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace rdmarepl::wal {

inline std::string segment_file_name(uint64_t number) {
  return fmt::format("wal-{:020}.log", number);
}
inline std::string checkpoint_file_name(uint64_t seq) {
  return fmt::format("checkpoint-{:020}.ckpt", seq);
}
inline std::string join_path(std::string_view dir, std::string_view name) {
  return fmt::format("{}/{}", dir, name);
}

namespace detail {
inline bool parse_numbered(std::string_view name, std::string_view prefix, std::string_view suffix,
                           uint64_t* out) noexcept {
  if (name.size() != prefix.size() + 20 + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix))
    return false;
  std::string_view digits = name.substr(prefix.size(), 20);
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), *out);
  return ec == std::errc() && p == digits.data() + digits.size();
}
}  // namespace detail

inline bool parse_segment_file_name(std::string_view name, uint64_t* number) noexcept {
  return detail::parse_numbered(name, "wal-", ".log", number);
}
inline bool parse_checkpoint_file_name(std::string_view name, uint64_t* seq) noexcept {
  return detail::parse_numbered(name, "checkpoint-", ".ckpt", seq);
}

}  // namespace rdmarepl::wal
