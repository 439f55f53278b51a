# parley's everyday targets. `make test` is what CI runs.
.PHONY: build test unit e2e fuzz ui lint check run

build:
	go build -buildvcs=true -o bin/parley ./cmd/parley

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
