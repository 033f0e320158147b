#include "linearizability.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

namespace rdmarepl::kvdemo {

namespace {

std::string describe(const HistoryOp& op) {
  const std::string ret =
      op.return_ns == kNoReturn ? std::string("no return") : fmt::format("{}", op.return_ns);
  const std::string what =
      op.write ? fmt::format("put('{}', '{}')", op.key, op.value)
               : fmt::format("get('{}') -> {}", op.key, op.found ? "'" + op.value + "'" : "absent");
  return fmt::format("{} [call {} ns, return {}] by client {} at {} (epoch {})", what, op.call_ns,
                     ret, op.client, op.node.empty() ? "?" : op.node, op.epoch);
}

// One key's operations. States are value ids: -1 absent, else an index into the key's
// distinct values.
class KeyChecker {
 public:
  explicit KeyChecker(std::vector<const HistoryOp*> ops) : ops_(std::move(ops)) {
    for (const HistoryOp* op : ops_) {
      value_id_.push_back(op->write || op->found ? intern(op->value) : -1);
    }
    build_entries();
  }

  // True when some order of the operations, each at a point between its call and its
  // return, is a valid run of one register. Otherwise `why` names the operation that could
  // not be placed when the search got furthest.
  bool check(std::string& why) {
    const size_t n = ops_.size();
    std::vector<uint64_t> linearized((n + 63) / 64, 0);
    std::unordered_set<std::string> cache;
    struct Frame {
      int entry;
      int32_t state;
    };
    std::vector<Frame> stack;
    int32_t state = -1;
    size_t best = 0;
    int stuck = -1;
    int e = next_[head()];
    while (next_[head()] != kEnd) {
      if (e == kEnd) return false;  // cannot happen: a return ends every open list
      const Entry& en = entries_[e];
      if (!en.is_return) {
        int32_t after = state;
        if (step(en.op, state, after)) {
          linearized[en.op / 64] |= uint64_t{1} << (en.op % 64);
          if (cache.insert(cache_key(linearized, after)).second) {
            stack.push_back({e, state});
            state = after;
            lift(e);
            e = next_[head()];
            continue;
          }
          linearized[en.op / 64] &= ~(uint64_t{1} << (en.op % 64));
        }
        e = next_[e];
        continue;
      }
      // A return whose operation is not linearized yet: backtrack.
      if (stack.size() >= best) {
        best = stack.size();
        stuck = static_cast<int>(en.op);
      }
      if (stack.empty()) {
        why = fmt::format("{} operations, the longest valid order covers {}; cannot place {}", n,
                          best, stuck >= 0 ? describe(*ops_[stuck]) : std::string("?"));
        return false;
      }
      const Frame f = stack.back();
      stack.pop_back();
      state = f.state;
      const uint32_t op = entries_[f.entry].op;
      linearized[op / 64] &= ~(uint64_t{1} << (op % 64));
      unlift(f.entry);
      e = next_[f.entry];
    }
    return true;
  }

 private:
  static constexpr int kEnd = -1;
  struct Entry {
    uint64_t time;
    bool is_return;
    uint32_t op;
  };

  int32_t intern(const std::string& v) {
    auto [it, added] = ids_.try_emplace(v, static_cast<int32_t>(ids_.size()));
    return it->second;
  }
  bool step(uint32_t op, int32_t state, int32_t& after) const {
    if (ops_[op]->write) {
      after = value_id_[op];
      return true;
    }
    after = state;
    return state == value_id_[op];
  }
  static std::string cache_key(const std::vector<uint64_t>& bits, int32_t state) {
    std::string k(reinterpret_cast<const char*>(bits.data()), bits.size() * sizeof(uint64_t));
    k.append(reinterpret_cast<const char*>(&state), sizeof state);
    return k;
  }

  // Entries in time order (calls before returns at the same instant: closed intervals),
  // then a doubly linked list over them behind a head at index size().
  void build_entries() {
    for (uint32_t i = 0; i < ops_.size(); ++i) {
      entries_.push_back({ops_[i]->call_ns, false, i});
      entries_.push_back({ops_[i]->return_ns, true, i});
    }
    std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
      if (a.time != b.time) return a.time < b.time;
      return !a.is_return && b.is_return;
    });
    const int n = static_cast<int>(entries_.size());
    match_.assign(n, kEnd);
    std::vector<int> call_of(ops_.size(), kEnd);
    for (int i = 0; i < n; ++i) {
      if (!entries_[i].is_return)
        call_of[entries_[i].op] = i;
      else
        match_[call_of[entries_[i].op]] = i;
    }
    next_.assign(n + 1, kEnd);
    prev_.assign(n + 1, kEnd);
    int last = head();
    for (int i = 0; i < n; ++i) {
      next_[last] = i;
      prev_[i] = last;
      last = i;
    }
  }
  [[nodiscard]] int head() const { return static_cast<int>(entries_.size()); }
  void unlink(int i) {
    next_[prev_[i]] = next_[i];
    if (next_[i] != kEnd) prev_[next_[i]] = prev_[i];
  }
  void relink(int i) {
    next_[prev_[i]] = i;
    if (next_[i] != kEnd) prev_[next_[i]] = i;
  }
  void lift(int call) {
    unlink(call);
    unlink(match_[call]);
  }
  void unlift(int call) {
    relink(match_[call]);
    relink(call);
  }

  std::vector<const HistoryOp*> ops_;
  std::vector<int32_t> value_id_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<Entry> entries_;
  std::vector<int> match_, next_, prev_;
};

}  // namespace

LinearizabilityResult check_linearizable(const std::vector<HistoryOp>& history) {
  std::map<std::string, std::vector<const HistoryOp*>> by_key;
  for (const HistoryOp& op : history) {
    if (!op.write && op.return_ns == kNoReturn) continue;
    by_key[op.key].push_back(&op);
  }
  LinearizabilityResult r;
  r.keys = by_key.size();
  for (auto& [key, ops] : by_key) {
    r.operations += ops.size();
    KeyChecker k(std::move(ops));
    std::string why;
    if (!k.check(why)) {
      r.linearizable = false;
      r.key = key;
      r.explanation = fmt::format("key '{}': {}", key, why);
      return r;
    }
  }
  return r;
}

Status write_porcupine_json(const std::vector<HistoryOp>& history, const std::string& path) {
  struct Event {
    uint64_t time;
    bool is_return;
    size_t op;
  };
  std::vector<Event> events;
  for (size_t i = 0; i < history.size(); ++i) {
    events.push_back({history[i].call_ns, false, i});
    events.push_back({history[i].return_ns, true, i});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    return !a.is_return && b.is_return;
  });
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Event& e : events) {
    const HistoryOp& op = history[e.op];
    nlohmann::ordered_json v;
    if (!e.is_return) {
      v = {{"op", op.write ? "put" : "get"}, {"key", op.key}, {"node", op.node}};
      if (op.write) v["value"] = op.value;
    } else if (op.return_ns == kNoReturn) {
      v = {{"unknown", true}};
    } else {
      v = {{"epoch", op.epoch}};
      if (!op.write) {
        v["found"] = op.found;
        v["value"] = op.found ? op.value : "";
      }
    }
    out.push_back(
        {{"ClientId", op.client}, {"Kind", e.is_return}, {"Value", std::move(v)}, {"Id", e.op}});
  }
  std::ofstream f(path);
  f << out.dump(1) << "\n";
  if (!f) return Error(Errc::io_error, "cannot write the history to " + path);
  return ok_status();
}

}  // namespace rdmarepl::kvdemo
