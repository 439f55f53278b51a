#!/usr/bin/env bash
# Runs every fuzz target in the repository (each `func FuzzX` in a _test.go
# file) for FUZZTIME each (default 15s). `go test -fuzz` takes one package and
# one target at a time, so the targets are found here rather than listed.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-15s}
targets=$(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' cmd internal | sort -u)
if [ -z "$targets" ]; then
	echo "no fuzz targets found" >&2
	exit 1
fi
while IFS=: read -r file fn; do
	name=${fn#func }
	pkg=./$(dirname "$file")
	printf '\n== %s %s (%s)\n' "$pkg" "$name" "$fuzztime"
	go test -tags e2e -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" </dev/null
done <<<"$targets"
