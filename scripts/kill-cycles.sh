#!/usr/bin/env bash
# make kill-cycles: parley killed with SIGKILL and restarted on its data,
# CYCLES times each way (docs/reliability.md):
#   TestKill9WithQueuedMessages  mid-turn with three messages queued (the
#                                scripted agent): each reaches it once, no gap
#   TestKill9WhileDelivering     right after a message went to the real Claude
#                                Code: never a false failed, never asked twice
# and the counts of the second, from its RESULT lines.
set -euo pipefail
cycles=${CYCLES:-100}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
go test -count="$cycles" -timeout 60m -v -run '^TestKill9(WithQueuedMessages|WhileDelivering)$' ./internal/daemon/ >"$out" 2>&1 || status=$?
grep -E '^(--- FAIL|FAIL|ok)' "$out" || true
# A failed cycle's complaints, each after its RESULT line.
grep -E 'crashdeliver_test.go:[0-9]+: ' "$out" | grep -B1 -E 'crashdeliver_test.go:[0-9]+: [^R]' | grep -v '^--$' || true
awk '
/RESULT state=/ {
	n++
	for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
	st[f["state"]]++
	if (f["said_before_kill"] == "delivering") judged++
	if (f["state"] == "failed" && f["asked_before_restart"] > 0) falsefailed++
	if (f["asked"] > 1) twice++
	if (f["state"] == "unknown" && f["asked_before_restart"] > 0) unknownasked++
}
END {
	printf "kill while delivering: %d cycles (%d still delivering at the kill, judged at the restart): submitted %d, failed %d, unknown %d (the model asked for %d of them); false failed %d, reached the model twice %d\n",
		n, judged, st["submitted"], st["failed"], st["unknown"], unknownasked, falsefailed, twice
}' "$out"
exit "$status"
