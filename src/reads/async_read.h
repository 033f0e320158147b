// The read client's asynchronous gets (ReadClient::get_async): each is a ReadOp that the
// client owns instead of a waiting caller, with the views of its keys, its results and its
// callback. Finished ones go back to a free list and are reused, so a client that keeps N
// gets in flight allocates N of them once.
#pragma once

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmarepl/reads/read_client.h"
#include "read_engine.h"

namespace rdmarepl::reads {

struct AsyncRead {
  ReadOp op;  // op.keys views `views`, op.out points at `results`, op.async at this
  std::vector<std::string_view> views;
  std::vector<ReadResult> results;
  ReadsCallback many;  // exactly one of the two is set
  ReadCallback one;
  bool in_use = false;

  // Runs the callback once with what the get came to (the op is done), and clears it.
  // A callback that throws ends the process: the caller holds the client's poller role.
  void finish() noexcept {
    Status st = std::move(op.status);
    if (one) {
      ReadCallback cb = std::move(one);
      one = nullptr;
      if (st.ok())
        cb(std::move(results[0]));
      else
        cb(std::move(st).error());
    } else {
      ReadsCallback cb = std::move(many);
      many = nullptr;
      if (st.ok())
        cb(std::move(results));
      else
        cb(std::move(st).error());
    }
    results.clear();
  }
};

// The client's AsyncReads, guarded by the client's lock.
class AsyncReadPool {
 public:
  AsyncRead& take() {
    AsyncRead* a = nullptr;
    if (free_.empty()) {
      all_.push_back(std::make_unique<AsyncRead>());
      a = all_.back().get();
    } else {
      a = free_.back();
      free_.pop_back();
    }
    a->in_use = true;
    a->op.async = a;
    return *a;
  }
  void give_back(AsyncRead& a) {
    a.in_use = false;
    free_.push_back(&a);
  }
  // The gets not yet finished (for the client's destructor).
  template <class F>
  void for_each_in_use(F&& f) {
    for (auto& a : all_)
      if (a->in_use) f(*a);
  }

 private:
  std::vector<std::unique_ptr<AsyncRead>> all_;
  std::vector<AsyncRead*> free_;
};

}  // namespace rdmarepl::reads
