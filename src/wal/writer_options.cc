#include "rdmarepl/wal/writer_options.h"

namespace rdmarepl::wal {

std::string_view to_string(Durability d) noexcept {
  switch (d) {
    case Durability::none:
      return "none";
    case Durability::batch:
      return "batch";
    case Durability::interval:
      return "interval";
  }
  return "unknown";
}

std::string_view to_string(Submission s) noexcept {
  switch (s) {
    case Submission::pwrite:
      return "pwrite";
    case Submission::io_uring:
      return "io_uring";
  }
  return "unknown";
}

std::string_view to_string(Backend b) noexcept {
  switch (b) {
    case Backend::automatic:
      return "auto";
    case Backend::file:
      return "file";
    case Backend::pmem:
      return "pmem";
  }
  return "unknown";
}

std::span<const Durability> enum_values(Durability) noexcept {
  static constexpr Durability kAll[] = {Durability::none, Durability::batch, Durability::interval};
  return kAll;
}

std::span<const Backend> enum_values(Backend) noexcept {
  static constexpr Backend kAll[] = {Backend::automatic, Backend::file, Backend::pmem};
  return kAll;
}

}  // namespace rdmarepl::wal
