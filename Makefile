# parley's everyday targets. `make test` is what CI runs.
.PHONY: build test unit e2e fuzz ui lint check run fault-stream soak-tmux soak-cluster kill-cycles

# The build's own time (UTC, RFC 3339) for `parley version` and /api/version; without it
# they would show the commit's time. Override for a reproducible build: make build BUILT=…
BUILT ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)

build:
	go build -buildvcs=true -ldflags "-X main.built=$(BUILT)" -o bin/parley ./cmd/parley
	go build -o bin/parley-hook ./cmd/parley-hook

run: build
	./bin/parley serve

# Every test, installing what the tests need (see scripts/test.sh).
test:
	./scripts/test.sh

# The fast tier with the race detector: every package's own tests; those that
# start a real agent, tmux, Chromium or a Node program skip under -short
# (internal/testkit/short.go), and the end-to-end suites in internal/e2e, built
# only with the e2e tag, are not compiled. notailnet leaves tsnet out of
# cmd/parley (internal/tailnet/tsnode has no files then): no test here needs
# it, and compiling it was a third of a cold run; `make test` and `make lint`
# build everything. `go test -short -tags notailnet ./...` is the same
# without -race.
unit:
	go test -race -short -tags notailnet -count=1 ./...

# Kills the real Claude Code at random moments across many sends and counts
# false `submitted` receipts against the model stand-in's log (not in CI;
# docs/benchmarks.md). PARLEY_FAULT_SENDS (default 60), PARLEY_FAULT_SEED.
fault-stream:
	PARLEY_FAULT_LOOP=1 go test -tags e2e -count=1 -timeout 60m -run TestStreamFaultLoop -v ./internal/e2e/claude/ | grep -E 'RESULT|FAIL|ok|---|submitted,|failed,|failed:|unknown,|asked'

# parley killed with SIGKILL and restarted on its data, CYCLES times (default
# 100) each way: mid-turn with three messages queued (each reaches the agent
# once, the log has no gap), and right after a message went to the real Claude
# Code (never a false failed, a retry never reaches the model twice); prints
# the second's counts (docs/reliability.md). Not run by `make test` (once there).
CYCLES ?= 100
kill-cycles:
	CYCLES=$(CYCLES) ./scripts/kill-cycles.sh

# Every fuzz target in the repository, FUZZTIME each (default 15s).
fuzz:
	./scripts/fuzz.sh

ui:
	cd ui && npm ci --no-audit --no-fund && npm run build

# staticcheck at a pinned version, fetched by the go command on first use.
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	go vet -tags e2e ./...
	test -z "$$(gofmt -l cmd internal ui/*.go)"
	go run $(STATICCHECK) -tags e2e ./...

check: lint unit

# The tmux send soak: faulted messages into the real Claude Code TUI, counted
# against the stand-in's request log (docs/reliability.md). Not run by `make test`.
SOAK ?= 1000
soak-tmux:
	PARLEY_SOAK_TMUX=$(SOAK) go test -tags e2e -count=1 -run '^TestSoakTmux$$' -timeout 6h -v ./internal/e2e/terminal/ | grep -v '^=== '

# The cluster soak: a hub and nodes b and c as `parley serve` processes, the real
# Claude Code on the nodes, SOAK_CLUSTER messages from a reconnecting client at
# the hub while kill -9 hits a node, the hub or an agent at random; counted
# against each node's log and the model's requests (docs/reliability.md). Built
# only with the soak tag: not run by `make test`. PARLEY_CLUSTER_SOAK_SEED.
SOAK_CLUSTER ?= 1000
soak-cluster:
	PARLEY_CLUSTER_SOAK=$(SOAK_CLUSTER) go test -tags e2e,soak -count=1 -run '^TestClusterSoak$$' -timeout 4h -v ./internal/e2e/cluster/ | grep -v '^=== '
