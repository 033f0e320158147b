// Minimal leveled logging on fmt. The default sink writes one line to stderr; a store can
// install its own sink. Logging is for the control plane; the data path does not log.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <span>
#include <string_view>

namespace rdmarepl::log {

enum class Level : int { trace = 0, debug = 1, info = 2, warn = 3, error = 4, off = 5 };
std::string_view to_string(Level level) noexcept;  // "trace" ... "off"
std::span<const Level> enum_values(Level) noexcept;

using Sink = std::function<void(Level, std::string_view)>;

// Installs `sink` (nullptr restores the stderr sink). Thread-safe.
void set_sink(Sink sink);
// Messages below `level` are dropped. Default: info, or RDMAREPL_LOG_LEVEL from the
// environment (trace|debug|info|warn|error|off).
void set_level(Level level) noexcept;
Level level() noexcept;

void write(Level level, std::string_view message);

template <class... Args>
void logf(Level lvl, fmt::format_string<Args...> f, Args&&... args) {
  if (lvl < level()) return;
  write(lvl, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  logf(Level::debug, f, std::forward<Args>(args)...);
}
template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  logf(Level::info, f, std::forward<Args>(args)...);
}
template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  logf(Level::warn, f, std::forward<Args>(args)...);
}
template <class... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  logf(Level::error, f, std::forward<Args>(args)...);
}

}  // namespace rdmarepl::log
