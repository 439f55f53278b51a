#!/usr/bin/env bash
# bench-idle.sh: the gateway's benchmarks (issue 17) on this machine, for
# docs/benchmarks.md. Run it with the machine otherwise idle: it prints the
# machine (uptime, CPU, Go), the load before and after, every raw result, and a
# Markdown table of the medians beside the aims, ready to paste.
#
#   scripts/bench-idle.sh [COUNT]
#
# COUNT  runs of each benchmark (default 5); each run is 3 iterations
#        (-benchtime 3x). About 3–4 minutes idle at COUNT 5, build included.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${1:-5}
pattern='Throughput|Replay10k|EventLatency'
pkg=./internal/daemon
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "commit: $(git log --oneline -1)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' + working tree changes')"
echo "date:   $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "uptime: $(uptime)"
echo "cpu:    $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs online"
echo "go:     $(go version)"
echo "kernel: $(uname -sr)"
echo

go test -c -o "$tmp/daemon.test" "$pkg"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
# The binary runs in its package directory (testdata, relative paths), as go test does.
(cd "$pkg" && "$tmp/daemon.test" -test.run '^$' -test.bench "$pattern" -test.benchtime 3x -test.count "$count") \
	| tee "$tmp/out.txt" | grep -E '^(Benchmark|--- FAIL|FAIL|ok)' || true
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg) ($(($(date +%s) - start)) s)"
echo

# median NAME FIELD: the median (and min–max) of the value before unit FIELD
# on the lines of benchmark NAME (exact, before the -GOMAXPROCS suffix).
median() {
	awk -v name="$1" -v unit="$2" -v scale="${3:-1}" '
		{ n = $1; sub(/-[0-9]+$/, "", n) }
		n == name { for (i = 3; i < NF; i++) if ($(i+1) == unit) v[++k] = $i / scale }
		END {
			if (k == 0) { print "—"; exit }
			for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
			m = (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
			fmt = (m >= 100) ? "%.0f" : (m >= 10 ? "%.1f" : "%.2f")
			printf fmt " (" fmt "–" fmt ", n = %d)\n", m, v[1], v[k], k
		}' "$tmp/out.txt"
}

echo "| measure | median (min–max) of $count runs | aim |"
echo "|---|---|---|"
echo "| throughput, one thread → 10 connections, events/s | $(median BenchmarkThroughput events/s) | 100,000 |"
echo "| replay of 10,000 events to a new connection, ms | $(median BenchmarkReplay10k ns/op 1000000) | 30 |"
echo "| CPU per event (server and readers), µs | $(median BenchmarkThroughput cpu-µs/event) | |"
echo "| CPU per replay (server and reader), ms | $(median BenchmarkReplay10k cpu-ms/op) | |"
echo "| event latency, 1 connection, p50 ms | $(median BenchmarkEventLatency/conns=1 p50-ms) | 0.1 |"
echo "| event latency, 1 connection, p99 ms | $(median BenchmarkEventLatency/conns=1 p99-ms) | |"
echo "| event latency, 100 connections, p50 ms | $(median BenchmarkEventLatency/conns=100 p50-ms) | |"
echo "| event latency, 100 connections, p99 ms | $(median BenchmarkEventLatency/conns=100 p99-ms) | 2 |"
echo "| 100 connections: the server's share (chunk → frame in the reader's socket), p99 ms | $(median BenchmarkEventLatency/conns=100 srv-p99-ms) | |"
echo "| 100 connections: of it, chunk → first connection's frame (lane, commit, hub), p99 ms | $(median BenchmarkEventLatency/conns=100 first-p99-ms) | |"
echo "| 100 connections: of it, first → last connection's frame (the fan-out's writes), p99 ms | $(median BenchmarkEventLatency/conns=100 fan-p99-ms) | |"
echo "| 100 connections: the reader's share (frame arrived → decoded), p99 ms | $(median BenchmarkEventLatency/conns=100 rd-p99-ms) | |"
echo "| 100 connections: CPU per chunk (server and 100 readers), µs | $(median BenchmarkEventLatency/conns=100 cpu-µs/chunk) | |"
echo "| event latency, 1000 connections (20 ms apart), p50 ms | $(median BenchmarkEventLatency/conns=1000 p50-ms) | |"
echo "| event latency, 1000 connections (20 ms apart), p99 ms | $(median BenchmarkEventLatency/conns=1000 p99-ms) | |"
echo
echo "Each run's p50/p99 is over every chunk every reader got in its 3 iterations (200 chunks,"
echo "2 ms apart, per reader per iteration); the table gives the median of those across runs."
