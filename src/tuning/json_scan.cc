#include "json_scan.h"

#include <fmt/format.h>

namespace rdmarepl::tuning::json {

namespace {

class Scanner {
 public:
  explicit Scanner(std::string_view t) : t_(t) {}

  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\r' || t_[i_] == '\t'))
      ++i_;
  }
  [[nodiscard]] bool at_end() const { return i_ >= t_.size(); }
  [[nodiscard]] size_t pos() const { return i_; }
  [[nodiscard]] char peek() const { return t_[i_]; }

  Status expect(char c) {
    ws();
    if (at_end()) return truncated();
    if (t_[i_] != c) return unexpected(fmt::format("'{}'", c));
    ++i_;
    return {};
  }

  // Reads a string; returns its contents (escapes not decoded).
  Result<std::string_view> string() {
    ws();
    if (at_end()) return truncated();
    if (t_[i_] != '"') return unexpected("a string");
    size_t start = ++i_;
    while (i_ < t_.size() && t_[i_] != '"') i_ += t_[i_] == '\\' ? 2 : 1;
    if (i_ >= t_.size()) return truncated();
    return t_.substr(start, i_++ - start);
  }

  // Skips one value of any kind and returns its raw text.
  Result<std::string_view> value() {
    ws();
    if (at_end()) return truncated();
    size_t start = i_;
    char c = t_[i_];
    if (c == '"') {
      auto s = string();
      if (!s) return std::move(s).error();
    } else if (c == '{' || c == '[') {
      int depth = 0;
      while (i_ < t_.size()) {
        char d = t_[i_];
        if (d == '"') {
          auto s = string();
          if (!s) return std::move(s).error();
          continue;
        }
        if (d == '{' || d == '[') ++depth;
        if (d == '}' || d == ']') {
          if (--depth == 0) {
            ++i_;
            break;
          }
        }
        ++i_;
      }
      if (depth != 0) return truncated();
    } else {
      while (i_ < t_.size() && t_[i_] != ',' && t_[i_] != '}' && t_[i_] != ']' && t_[i_] != ' ' &&
             t_[i_] != '\n' && t_[i_] != '\r' && t_[i_] != '\t')
        ++i_;
      if (i_ == start) return unexpected("a value");
    }
    return t_.substr(start, i_ - start);
  }

  Error truncated() const {
    return Error(Errc::corrupt, fmt::format("JSON truncated at byte {}", t_.size()));
  }
  Error unexpected(std::string_view what) const {
    return Error(Errc::corrupt, fmt::format("JSON malformed at byte {}: expected {}, found '{}'",
                                            i_, what, t_[i_]));
  }

 private:
  std::string_view t_;
  size_t i_ = 0;
};

}  // namespace

Result<std::vector<Member>> object_members(std::string_view text) {
  Scanner s(text);
  RDMAREPL_TRY(s.expect('{'));
  std::vector<Member> out;
  s.ws();
  if (!s.at_end() && s.peek() == '}') {
    RDMAREPL_TRY(s.expect('}'));
  } else {
    while (true) {
      auto key = s.string();
      if (!key) return std::move(key).error();
      RDMAREPL_TRY(s.expect(':'));
      auto v = s.value();
      if (!v) return std::move(v).error();
      out.push_back({*key, *v});
      s.ws();
      if (s.at_end()) return s.truncated();
      if (s.peek() == '}') {
        RDMAREPL_TRY(s.expect('}'));
        break;
      }
      RDMAREPL_TRY(s.expect(','));
    }
  }
  s.ws();
  if (!s.at_end()) return s.unexpected("the end of the text");
  return out;
}

Result<std::vector<std::string_view>> array_elements(std::string_view text) {
  Scanner s(text);
  RDMAREPL_TRY(s.expect('['));
  std::vector<std::string_view> out;
  s.ws();
  if (!s.at_end() && s.peek() == ']') return out;
  while (true) {
    auto v = s.value();
    if (!v) return std::move(v).error();
    out.push_back(*v);
    s.ws();
    if (s.at_end()) return s.truncated();
    if (s.peek() == ']') break;
    RDMAREPL_TRY(s.expect(','));
  }
  return out;
}

Result<std::vector<std::string>> string_array(std::string_view text) {
  Scanner s(text);
  RDMAREPL_TRY(s.expect('['));
  std::vector<std::string> out;
  s.ws();
  if (!s.at_end() && s.peek() == ']') return out;
  while (true) {
    auto v = s.string();
    if (!v) return std::move(v).error();
    out.emplace_back(*v);
    s.ws();
    if (s.at_end()) return s.truncated();
    if (s.peek() == ']') break;
    RDMAREPL_TRY(s.expect(','));
  }
  return out;
}

std::string_view find(const std::vector<Member>& members, std::string_view key) {
  for (const auto& m : members) {
    if (m.key == key) return m.value;
  }
  return {};
}

}  // namespace rdmarepl::tuning::json
