// The file system the doctor reads sysfs and procfs from: "/" on a node, a fake tree in the
// tests. Every check reads through it, never through absolute paths.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rdmarepl::doctor {

class SysRoot {
 public:
  explicit SysRoot(std::filesystem::path root = "/") : root_(std::move(root)) {}

  // The file's contents without the trailing newline; nullopt when it cannot be read.
  [[nodiscard]] std::optional<std::string> read(const std::string& path) const;
  // Names of the entries of a directory, sorted; empty when it does not exist.
  [[nodiscard]] std::vector<std::string> list(const std::string& path) const;
  [[nodiscard]] bool exists(const std::string& path) const;
  [[nodiscard]] std::filesystem::path full(const std::string& path) const;

 private:
  std::filesystem::path root_;
};

}  // namespace rdmarepl::doctor
