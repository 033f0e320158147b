// Enums as text, with one spelling across rdmarepl. Every enum that has a text form
// declares, in its own namespace (so that argument-dependent lookup finds it):
//   std::string_view to_string(E) noexcept;
// and an enum that is also read back from text (flags, JSON, CSV, the environment) adds
//   std::span<const E> enum_values(E) noexcept;  // every value with a text form
// so that from_string<E>() and parse_enum<E>() below accept exactly what to_string prints.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "rdmarepl/core/result.h"

namespace rdmarepl {

// The value of E whose to_string() is `text`, or nothing.
template <class E>
std::optional<E> from_string(std::string_view text) noexcept {
  for (E e : enum_values(E{}))
    if (to_string(e) == text) return e;
  return std::nullopt;
}

// "a, b, c": the accepted spellings of E, for messages.
template <class E>
std::string enum_names() {
  std::string out;
  for (E e : enum_values(E{})) {
    if (!out.empty()) out += ", ";
    out += to_string(e);
  }
  return out;
}

// from_string<E>(text), or an invalid_argument error naming `what` (the flag, field or
// column being read), the text and the accepted spellings.
template <class E>
Result<E> parse_enum(std::string_view text, std::string_view what) {
  if (auto e = from_string<E>(text)) return *e;
  return Error(Errc::invalid_argument,
               std::string(what) + " '" + std::string(text) + "' is not one of " + enum_names<E>());
}

}  // namespace rdmarepl
