#!/usr/bin/env python3
"""An independent check of a failover run's history, read from the Porcupine events that
rdmarepl-bench --history writes: every call has one return, and each key's operations,
as a register, have a linearization (Wing & Gong's search with Lowe's cache, written
separately from the C++ checker so that the two can disagree). Exit 0: linearizable."""
import json
import sys
from collections import defaultdict


def load(path):
    events = json.load(open(path))
    calls, returns = {}, {}
    for pos, e in enumerate(events):
        assert set(e) == {"ClientId", "Kind", "Value", "Id"}, e
        (returns if e["Kind"] else calls)[e["Id"]] = (pos, e["Value"])
    assert calls.keys() == returns.keys(), "a call without a return or the reverse"
    ops = defaultdict(list)
    for i, (pos, call) in calls.items():
        rpos, ret = returns[i]
        assert rpos > pos, f"operation {i} returns before its call"
        if call["op"] == "get" and ret.get("unknown"):
            continue  # a read of unknown outcome says nothing
        value = call.get("value") if call["op"] == "put" else (
            ret["value"] if ret["found"] else None)
        ops[call["key"]].append((pos, rpos, call["op"] == "put", value))
    return ops


def linearizable(ops):
    # Entries (position, is_return, op) in history order; a doubly linked list over them.
    entries = sorted([(c, 0, i) for i, (c, r, w, v) in enumerate(ops)] +
                     [(r, 1, i) for i, (c, r, w, v) in enumerate(ops)])
    n = len(entries)
    nxt = list(range(1, n + 1)) + [0]
    prv = [n] + list(range(n))
    nxt[n], prv[0] = 0, n  # index n is the head
    nxt[n - 1] = -1
    ret_of = {}
    for k, (_, is_ret, i) in enumerate(entries):
        if is_ret:
            ret_of[i] = k
    def unlink(k):
        nxt[prv[k]] = nxt[k]
        if nxt[k] != -1:
            prv[nxt[k]] = prv[k]
    def relink(k):
        nxt[prv[k]] = k
        if nxt[k] != -1:
            prv[nxt[k]] = k
    state, done, stack, seen = None, 0, [], set()
    k = nxt[n]
    while nxt[n] != -1:
        _, is_ret, i = entries[k]
        if not is_ret:
            _, _, write, value = ops[i]
            if write or value == state:
                after = value if write else state
                key = (done | (1 << i), after)
                if key not in seen:
                    seen.add(key)
                    stack.append((k, state))
                    state, done = after, done | (1 << i)
                    unlink(k)
                    unlink(ret_of[i])
                    k = nxt[n]
                    continue
            k = nxt[k]
        else:
            if not stack:
                return False
            k, state = stack.pop()
            i = entries[k][2]
            done &= ~(1 << i)
            relink(ret_of[i])
            relink(k)
            k = nxt[k]
    return True


def main():
    ops = load(sys.argv[1])
    total = sum(len(v) for v in ops.values())
    for key, key_ops in sorted(ops.items()):
        if not linearizable(key_ops):
            print(f"history {sys.argv[1]}: key {key!r} ({len(key_ops)} operations) has no "
                  "linearization")
            return 1
    print(f"history: {total} operations on {len(ops)} keys, linearizable")
    return 0


if __name__ == "__main__":
    sys.exit(main())
