#include "flags.h"

#include <algorithm>
#include <charconv>

namespace rdmarepl::kvdemo {

Result<Flags> Flags::parse(int argc, char** argv, const std::vector<std::string>& switches) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      return Error(Errc::invalid_argument, "unexpected argument '" + std::string(arg) +
                                               "': flags start with --; try --help");
    }
    std::string name(arg.substr(2));
    std::string value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (std::find(switches.begin(), switches.end(), name) != switches.end()) {
      value = "true";
    } else {
      if (i + 1 >= argc) {
        return Error(Errc::invalid_argument, "flag --" + name + " needs a value; try --help");
      }
      value = argv[++i];
    }
    f.values_[name].push_back(std::move(value));
  }
  return f;
}

std::string Flags::get(std::string_view name, std::string_view fallback) const {
  auto it = values_.find(std::string(name));
  return it == values_.end() ? std::string(fallback) : it->second.back();
}

std::vector<std::string> Flags::get_all(std::string_view name) const {
  auto it = values_.find(std::string(name));
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

Result<uint64_t> Flags::get_u64(std::string_view name, uint64_t fallback) const {
  if (!has(name)) return fallback;
  return parse_count(get(name), "--" + std::string(name));
}

std::vector<std::string> Flags::unknown(const std::vector<std::string>& known) const {
  std::vector<std::string> out;
  for (const auto& [name, _] : values_) {
    if (std::find(known.begin(), known.end(), name) == known.end()) out.push_back("--" + name);
  }
  return out;
}

Result<uint64_t> parse_count(std::string_view text, std::string_view what) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  uint64_t mult = 1;
  std::string_view rest(p, static_cast<size_t>(text.data() + text.size() - p));
  if (rest == "k" || rest == "K") {
    mult = 1000;
  } else if (rest == "m" || rest == "M") {
    mult = 1000 * 1000;
  } else if (rest == "g" || rest == "G") {
    mult = 1000 * 1000 * 1000;
  } else if (rest == "KiB" || rest == "ki") {
    mult = 1024;
  } else if (rest == "MiB" || rest == "mi") {
    mult = 1024 * 1024;
  } else if (!rest.empty()) {
    ec = std::errc::invalid_argument;
  }
  if (ec != std::errc() || text.empty()) {
    return Error(Errc::invalid_argument, std::string(what) + ": '" + std::string(text) +
                                             "' is not a count; use digits with an optional "
                                             "k/m/g (x1000) or KiB/MiB suffix, e.g. 20000 or 1m");
  }
  return v * mult;
}

Result<std::pair<uint64_t, uint64_t>> parse_range(std::string_view text, std::string_view what) {
  auto dash = text.find('-');
  if (dash == std::string_view::npos) {
    auto v = parse_count(text, what);
    if (!v) return std::move(v).error();
    return std::pair<uint64_t, uint64_t>{*v, *v};
  }
  auto lo = parse_count(text.substr(0, dash), what);
  if (!lo) return std::move(lo).error();
  auto hi = parse_count(text.substr(dash + 1), what);
  if (!hi) return std::move(hi).error();
  if (*lo > *hi) {
    return Error(Errc::invalid_argument, std::string(what) + ": range '" + std::string(text) +
                                             "' has MIN > MAX; write it as MIN-MAX, e.g. 16-1024");
  }
  return std::pair<uint64_t, uint64_t>{*lo, *hi};
}

Result<std::vector<transport::Endpoint>> parse_endpoints(std::string_view text,
                                                         std::string_view what) {
  std::vector<transport::Endpoint> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string item(text.substr(pos, end - pos));
    auto colon = item.rfind(':');
    if (colon == std::string::npos) {
      return Error(Errc::invalid_argument,
                   std::string(what) + " item '" + item + "' is not host:port");
    }
    auto port = parse_count(item.substr(colon + 1), std::string(what) + " port");
    if (!port || *port == 0 || *port > 65535) {
      return Error(Errc::invalid_argument,
                   std::string(what) + " item '" + item + "' has a bad port");
    }
    out.push_back(transport::Endpoint{item.substr(0, colon), static_cast<uint16_t>(*port)});
    pos = end + 1;
  }
  return out;
}

}  // namespace rdmarepl::kvdemo
