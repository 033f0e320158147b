// Result<T>: a value or an Error, for control-plane calls. Status is Result<void>.
#pragma once

#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

#include "rdmarepl/core/error.h"

namespace rdmarepl {

template <class T>
class [[nodiscard]] Result {
 public:
  using value_type = T;

  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT(implicit)
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT(implicit)

  [[nodiscard]] bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& {
    assert(!ok());
    return std::get<1>(v_);
  }
  Error&& error() && {
    assert(!ok());
    return std::get<1>(std::move(v_));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT(implicit)

  [[nodiscard]] bool ok() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const Error& error() const& {
    assert(!ok_);
    return error_;
  }
  Error&& error() && {
    assert(!ok_);
    return std::move(error_);
  }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

inline Status ok_status() {
  return {};
}

}  // namespace rdmarepl

// Propagates the error of a Result-returning expression: RDMAREPL_TRY(conn.open());
#define RDMAREPL_TRY(expr)                                                          \
  do {                                                                              \
    auto rdmarepl_try_result_ = (expr);                                             \
    if (!rdmarepl_try_result_.ok()) return std::move(rdmarepl_try_result_).error(); \
  } while (0)
