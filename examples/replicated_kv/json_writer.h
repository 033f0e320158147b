// A minimal JSON object writer for result files: flat and nested objects of numbers,
// strings and booleans. Enough for the bench results; not a general JSON library.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace rdmarepl::kvdemo {

class JsonWriter {
 public:
  JsonWriter& begin_object(std::string_view key = {}) {
    comma();
    if (!key.empty()) out_.append(quote(key)).append(": ");
    out_ += "{";
    first_ = true;
    return *this;
  }
  JsonWriter& end_object() {
    out_ += "}";
    first_ = false;
    return *this;
  }
  JsonWriter& field(std::string_view key, std::string_view value) { return raw(key, quote(value)); }
  JsonWriter& field(std::string_view key, const char* value) {
    return field(key, std::string_view(value));
  }
  JsonWriter& field(std::string_view key, bool value) { return raw(key, value ? "true" : "false"); }
  JsonWriter& field(std::string_view key, uint64_t value) {
    return raw(key, std::to_string(value));
  }
  JsonWriter& field(std::string_view key, uint32_t value) {
    return raw(key, std::to_string(value));
  }
  // Non-finite numbers become null (JSON has no NaN).
  JsonWriter& field(std::string_view key, double value) {
    return raw(key, std::isfinite(value) ? fmt::format("{:.3f}", value) : "null");
  }
  JsonWriter& null_field(std::string_view key) { return raw(key, "null"); }
  // `json` must already be valid JSON (e.g. an object produced elsewhere).
  JsonWriter& raw(std::string_view key, std::string_view json) {
    comma();
    out_.append(quote(key)).append(": ").append(json);
    return *this;
  }
  [[nodiscard]] const std::string& str() const noexcept { return out_; }

  static std::string quote(std::string_view s) {
    std::string q(1, '"');
    for (char c : s) {
      switch (c) {
        case '"':
          q += "\\\"";
          break;
        case '\\':
          q += "\\\\";
          break;
        case '\n':
          q += "\\n";
          break;
        case '\t':
          q += "\\t";
          break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            q += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
          } else {
            q += c;
          }
      }
    }
    q.push_back('"');
    return q;
  }

 private:
  void comma() {
    if (!first_) out_ += ", ";
    first_ = false;
  }

  std::string out_;
  bool first_ = true;
};

// The number after "key": in a flat JSON text, or NaN when absent (for reading back the
// comparison script's result). Good enough for our own output; not a JSON parser.
inline double json_number(std::string_view json, std::string_view key) {
  std::string pat = fmt::format("\"{}\"", key);
  auto pos = json.find(pat);
  if (pos == std::string_view::npos) return std::nan("");
  pos = json.find(':', pos + pat.size());
  if (pos == std::string_view::npos) return std::nan("");
  std::string rest(json.substr(pos + 1, 64));
  char* end = nullptr;
  double v = std::strtod(rest.c_str(), &end);
  return end == rest.c_str() ? std::nan("") : v;
}

inline bool json_true(std::string_view json, std::string_view key) {
  std::string pat = fmt::format("\"{}\"", key);
  auto pos = json.find(pat);
  if (pos == std::string_view::npos) return false;
  pos = json.find(':', pos + pat.size());
  if (pos == std::string_view::npos) return false;
  auto v = json.find_first_not_of(" \t\n", pos + 1);
  return v != std::string_view::npos && json.substr(v, 4) == "true";
}

}  // namespace rdmarepl::kvdemo
