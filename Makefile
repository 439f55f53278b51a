# parley's everyday targets. `make test` is what CI runs.
.PHONY: build test unit e2e fuzz ui lint check run

# The build's own time (UTC, RFC 3339) for `parley version` and /api/version; without it
# they would show the commit's time. Override for a reproducible build: make build BUILT=…
BUILT ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)

build:
	go build -buildvcs=true -ldflags "-X main.built=$(BUILT)" -o bin/parley ./cmd/parley

run: build
	./bin/parley serve

# Every test, installing what the tests need (see scripts/test.sh).
test:
	./scripts/test.sh

# Fast tests only: no real agents, no browser.
unit:
	go test -race -count=1 ./internal/chat/... ./internal/wire/... ./internal/config/... ./internal/hub/... ./internal/store/... ./internal/daemon/...

fuzz:
	go test -run '^$$' -fuzz FuzzDecode -fuzztime 60s ./internal/wire/

ui:
	cd ui && npm ci --no-audit --no-fund && npm run build

lint:
	go vet ./...
	test -z "$$(gofmt -l cmd internal ui/*.go)"

check: lint unit
