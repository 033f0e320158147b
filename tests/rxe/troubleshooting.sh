#!/bin/bash
# The verbs errors docs/TROUBLESHOOTING.md quotes, produced on rxe0 (verbs_tests, hidden tag
# [.troubleshooting]): each produced message must appear in the guide, numbers and hex
# values aside (queue pair numbers, addresses and PSNs differ from run to run).
#   troubleshooting.sh VERBS_TESTS GUIDE
set -uo pipefail
tests="$1"
guide="$2"
"$tests" --use-colour no "[.troubleshooting]" >run.log 2>&1
rc=$?
cat run.log
[[ $rc -eq 0 ]] || { echo "troubleshooting: the producing test failed ($rc)"; exit 1; }
grep '^TROUBLESHOOTING: ' run.log | sed 's/^TROUBLESHOOTING: //' >produced.txt
[[ $(wc -l <produced.txt) -eq 5 ]] || { echo "troubleshooting: expected 5 messages"; exit 1; }
norm() { sed -E 's/0x[0-9a-f]+/#/g; s/[0-9]+/#/g'; }
norm <"$guide" >guide.norm
missing=0
while IFS= read -r line; do
  n="$(norm <<<"$line")"
  if ! grep -qF -- "$n" guide.norm; then
    echo "troubleshooting: not in the guide: $line"
    missing=1
  fi
done <produced.txt
[[ $missing -eq 0 ]] || exit 1
echo "troubleshooting: the guide quotes all 5 verbs messages as the library prints them"
