#include "sysroot.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace rdmarepl::doctor {

std::filesystem::path SysRoot::full(const std::string& path) const {
  return root_ / std::filesystem::path(path).relative_path();
}

std::optional<std::string> SysRoot::read(const std::string& path) const {
  std::ifstream in(full(path));
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return std::nullopt;
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::vector<std::string> SysRoot::list(const std::string& path) const {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(full(path), ec), end; !ec && it != end;
       it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool SysRoot::exists(const std::string& path) const {
  std::error_code ec;
  return std::filesystem::exists(full(path), ec);
}

}  // namespace rdmarepl::doctor
