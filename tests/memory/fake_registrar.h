// A registrar for tests: records every call, hands out distinct keys, can be told to fail.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "rdmarepl/memory/registrar.h"

namespace rdmarepl::memory::testing {

class FakeRegistrar {
 public:
  // The Registrar refers to this object, which must outlive every user of it.
  Registrar registrar() {
    Registrar r;
    r.reg = [this](void* addr, size_t length,
                   transport::Access access) -> Result<transport::RegisteredRegion> {
      std::lock_guard lock(mu_);
      ++reg_calls_;
      if (fail_next_) {
        fail_next_ = false;
        return Error(std::error_code(ENOMEM, std::generic_category()), "ibv_reg_mr: ENOMEM");
      }
      transport::RegisteredRegion region;
      region.addr = addr;
      region.length = length;
      region.access = access;
      region.keys = {next_key_, next_key_ + 1};
      next_key_ += 2;
      live_[addr] = length;
      return region;
    };
    r.dereg = [this](const transport::RegisteredRegion& region) {
      std::lock_guard lock(mu_);
      ++dereg_calls_;
      live_.erase(region.addr);
    };
    return r;
  }

  void fail_next() {
    std::lock_guard lock(mu_);
    fail_next_ = true;
  }
  int reg_calls() const {
    std::lock_guard lock(mu_);
    return reg_calls_;
  }
  int dereg_calls() const {
    std::lock_guard lock(mu_);
    return dereg_calls_;
  }
  size_t live() const {
    std::lock_guard lock(mu_);
    return live_.size();
  }
  bool is_live(const void* addr) const {
    std::lock_guard lock(mu_);
    return live_.count(const_cast<void*>(addr)) != 0;
  }

 private:
  mutable std::mutex mu_;
  int reg_calls_ = 0;
  int dereg_calls_ = 0;
  bool fail_next_ = false;
  uint32_t next_key_ = 100;
  std::map<void*, size_t> live_;
};

}  // namespace rdmarepl::memory::testing
