#!/usr/bin/env bash
# Plots the per-window p99 commit latency of `rdmarepl-bench --phased` over time, one line per
# strategy, with the phase boundaries. Needs gnuplot (Debian: gnuplot-nox); not used by tests.
#   benchmarks/tuning/plot_phases.sh phased.csv docs/img/tuning_phases.png
set -euo pipefail
in=${1:?usage: plot_phases.sh PHASED_CSV OUT_PNG}
out=${2:?usage: plot_phases.sh PHASED_CSV OUT_PNG}
command -v gnuplot >/dev/null || { echo "plot_phases.sh: gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Each strategy's windows, with time restarted at 0 per strategy (each ran on its own cluster;
# best-static's windows are from a different run per phase and are not in the CSV).
awk -F, -v dir="$tmp" 'NR > 1 {
  if (!($1 in t0)) t0[$1] = $4 - 0.25;
  f = dir "/" $1 ".dat"; print ($4 - t0[$1]), $6 > f
  if ($1 == "static-default") { if ($2 != last) { print ($4 - t0[$1] - 0.25) > (dir "/bounds") } last = $2 }
}' "$in"
plots=""
for f in "$tmp"/*.dat; do
  name=$(basename "$f" .dat)
  plots+="'$f' using 1:(\$2/1000) with lines lw 2 title '$name', "
done
arrows=""
while read -r b; do
  [[ "$b" == "0" || "$b" == "0.00" ]] && continue
  arrows+="set arrow from $b, graph 0 to $b, graph 1 nohead dt 2 lc rgb 'gray40'; "
done < <(tail -n +2 "$tmp/bounds" 2>/dev/null || true)
gnuplot <<GP
set terminal png size 1100,550 noenhanced
set output '$out'
set title 'p99 commit latency per window (phases: steady-1k | load+50% | values-16k | mixed)'
set xlabel 'seconds since the strategy started'
set ylabel 'p99 latency (ms, log scale)'
set logscale y
set grid
set key outside right
$arrows
plot ${plots%, }
GP
echo "wrote $out"
