#!/usr/bin/env bash
# bench-compare.sh: the gateway's benchmarks at an earlier commit and now, in
# one run, alternating (old, new, old, new, …) so the machine's load falls on
# both alike; benchstat then prints each measure's ratio.
#
#   scripts/bench-compare.sh [BASE] [PATTERN] [COUNT]
#
# BASE     the commit to compare with (default HEAD~1; the working tree is "new")
# PATTERN  the benchmarks (default 'Throughput|Replay10k|EventLatency')
# COUNT    runs of each side (default 6; benchstat wants at least 6 for a p-value)
#
# It prints the CPU, the load average before and after, and benchstat's table.
# Nothing is installed: the two test binaries and the results stay in a
# temporary folder, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

base=${1:-HEAD~1}
pattern=${2:-'Throughput|Replay10k|EventLatency'}
count=${3:-6}
pkg=./internal/daemon
benchstat=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

tmp=$(mktemp -d)
cleanup() {
	git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

git worktree add --detach "$tmp/base" "$base" >/dev/null
echo "base: $(git -C "$tmp/base" log --oneline -1)"
echo "new:  $(git log --oneline -1)$(git diff --quiet || echo ' + working tree changes')"
(cd "$tmp/base" && go test -c -o "$tmp/old.test" "$pkg")
go test -c -o "$tmp/new.test" "$pkg"

echo "cpu:  $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$count"); do
	for side in old new; do
		# Each binary runs in its own package directory (testdata, relative paths).
		(cd "$pkg" && "$tmp/$side.test" -test.run '^$' -test.bench "$pattern" -test.benchtime 3x -test.count 1) \
			| grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >>"$tmp/$side.txt"
	done
	echo "round $i/$count done (load $(cut -d' ' -f1 /proc/loadavg))"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
go run "$benchstat" "$tmp/old.txt" "$tmp/new.txt"
