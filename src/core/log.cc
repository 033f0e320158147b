#include "rdmarepl/core/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "rdmarepl/core/clock.h"
#include "rdmarepl/core/enum_text.h"

namespace rdmarepl::log {
namespace {

Level level_from_env() noexcept {
  const char* v = std::getenv("RDMAREPL_LOG_LEVEL");
  if (v == nullptr) return Level::info;
  return from_string<Level>(v).value_or(Level::info);
}

std::atomic<Level> g_level{level_from_env()};

std::mutex& sink_mutex() {
  static std::mutex m;
  return m;
}
Sink& sink() {
  static Sink s;
  return s;
}

}  // namespace

std::string_view to_string(Level level) noexcept {
  switch (level) {
    case Level::trace:
      return "trace";
    case Level::debug:
      return "debug";
    case Level::info:
      return "info";
    case Level::warn:
      return "warn";
    case Level::error:
      return "error";
    case Level::off:
      return "off";
  }
  return "?";
}

std::span<const Level> enum_values(Level) noexcept {
  static constexpr Level kAll[] = {Level::trace, Level::debug, Level::info,
                                   Level::warn,  Level::error, Level::off};
  return kAll;
}

void set_sink(Sink s) {
  std::lock_guard lock(sink_mutex());
  sink() = std::move(s);
}

void set_level(Level l) noexcept {
  g_level.store(l, std::memory_order_relaxed);
}
Level level() noexcept {
  return g_level.load(std::memory_order_relaxed);
}

void write(Level l, std::string_view message) {
  if (l < level()) return;
  std::lock_guard lock(sink_mutex());
  if (sink()) {
    sink()(l, message);
    return;
  }
  uint64_t ms = mono_ns() / 1'000'000;
  const std::string_view name = to_string(l);
  std::fprintf(stderr, "[rdmarepl %llu.%03llu %.*s] %.*s\n",
               static_cast<unsigned long long>(ms / 1000),
               static_cast<unsigned long long>(ms % 1000), static_cast<int>(name.size()),
               name.data(), static_cast<int>(message.size()), message.data());
}

}  // namespace rdmarepl::log
