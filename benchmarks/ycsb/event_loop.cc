// The event-loop client thread (client_ops.h, --inflight N > 1): N operations in flight on
// one thread, over a ReadClient of its own, as a redis-benchmark process keeps N
// connections busy. The loop starts an operation on every free slot, then waits for one to
// finish:
//   read    get_async(); its callback (run by poll() on this thread) checks the value;
//   update  replicate() through the leader, then finished once committed() (checked each
//           turn; the loop waits in the leader's wait() when only updates are in flight);
//   insert and read-modify-write run one at a time inside the loop, as in client_thread():
//           an insert holds the insert lock until its commit, a read-modify-write reads then
//           writes.
#include <random>
#include <thread>
#include <vector>

#include "client_ops.h"
#include "rdmarepl/core/clock.h"

namespace rdmarepl::ycsb {
namespace {

constexpr uint64_t kCommitGiveUpNs = 10'000'000'000;  // as committed()'s wait

struct Slot {
  std::string key;  // a read's key: its bytes stay put until the callback
  reads::Consistency consistency;
  uint64_t own_version = 0;
  uint64_t start_ns = 0;
  replication::Ticket ticket;  // an update's
};

class EventLoop {
 public:
  EventLoop(Shared& s, uint32_t t, reads::ReadClient& client)
      : s_(s), client_(client), rng_(s.o.seed * 7919 + t), slots_(s.o.inflight) {
    for (uint32_t k = s.o.inflight; k-- > 0;) free_.push_back(k);
    if (s.o.target_ops > 0) per_thread_ = static_cast<double>(s.o.target_ops) / s.o.threads;
  }

  void run() {
    t0_ = mono_ns();
    for (;;) {
      const bool throttled = start_operations();
      finish_updates();
      const bool idle = free_.size() == slots_.size();
      if (out_of_operations_ && idle) return;
      if (reads_in_flight_ > 0) {
        client_.poll(std::chrono::milliseconds(1));
      } else if (!updating_.empty()) {
        (void)s_.cluster.leader->wait(slots_[updating_.front()].ticket,
                                      std::chrono::milliseconds(1));
      } else if (throttled) {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
  }

 private:
  // Starts an operation on every free slot; true when the target rate held one back.
  bool start_operations() {
    while (!free_.empty() && !out_of_operations_) {
      if (per_thread_ > 0 &&
          mono_ns() < t0_ + static_cast<uint64_t>(static_cast<double>(done_) * 1e9 / per_thread_))
        return true;
      if (s_.issued.fetch_add(1) >= s_.o.operation_count) {
        out_of_operations_ = true;
        break;
      }
      ++done_;
      const double p = pick_(rng_);
      const Mix& m = s_.o.mix;
      if (p < m.read) {
        start_read(s_.chooser.next(rng_, s_.inserted.load()));
      } else if (p < m.read + m.update) {
        start_update(s_.chooser.next(rng_, s_.inserted.load()));
      } else if (p < m.read + m.update + m.insert) {
        insert_one(s_, mine_);
      } else {
        read_modify_write(s_, client_, mine_, s_.chooser.next(rng_, s_.inserted.load()));
      }
    }
    return false;
  }

  uint32_t take_slot() {
    const uint32_t k = free_.back();
    free_.pop_back();
    slots_[k].start_ns = mono_ns();
    return k;
  }

  void start_read(uint64_t i) {
    const uint32_t k = take_slot();
    Slot& slot = slots_[k];
    slot.key = key_of(i);
    slot.consistency = consistency_for(s_, i, mine_, slot.own_version);
    const Status st =
        client_.get_async(slot.key, slot.consistency, [this, k](Result<reads::ReadResult> r) {
          Slot& sl = slots_[k];
          const bool ok = check_read(s_, sl.key, r, sl.consistency, sl.own_version);
          s_.read.record(mono_ns() - sl.start_ns);
          if (!ok) ++s_.read_fail;
          --reads_in_flight_;
          free_.push_back(k);
        });
    if (st.ok()) {
      ++reads_in_flight_;
    } else {
      ++s_.read_fail;
      free_.push_back(k);
    }
  }

  void start_update(uint64_t i) {
    const uint32_t k = take_slot();
    const replication::Ticket ticket = write(s_, i);
    mine_[i] = {ticket, s_.versions[i].load()};
    if (ticket.seq == 0) {
      s_.update.record(mono_ns() - slots_[k].start_ns);
      ++s_.update_fail;
      free_.push_back(k);
      return;
    }
    slots_[k].ticket = ticket;
    updating_.push_back(k);
  }

  // Frees the slots of the updates now committed (or given up on).
  void finish_updates() {
    const uint64_t now = mono_ns();
    std::erase_if(updating_, [&](uint32_t k) {
      Slot& slot = slots_[k];
      const bool ok = s_.cluster.leader->committed(slot.ticket);
      if (!ok && now - slot.start_ns < kCommitGiveUpNs) return false;
      s_.update.record(now - slot.start_ns);
      if (!ok) ++s_.update_fail;
      free_.push_back(k);
      return true;
    });
  }

  Shared& s_;
  reads::ReadClient& client_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> pick_{0, 1};
  OwnWrites mine_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;      // slot indexes
  std::vector<uint32_t> updating_;  // slots of updates awaiting their commit, oldest first
  uint32_t reads_in_flight_ = 0;
  double per_thread_ = 0;  // target operations per second of this thread (0: unthrottled)
  uint64_t t0_ = 0;
  uint64_t done_ = 0;
  bool out_of_operations_ = false;
};

}  // namespace

void event_loop_thread(Shared& s, uint32_t t, reads::ReadClient& client) {
  EventLoop(s, t, client).run();
}

}  // namespace rdmarepl::ycsb
