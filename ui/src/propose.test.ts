// "Make a rule…"'s proposal (src/propose.ts). Run by `go test ./ui/` with
// the pinned Node 22, which runs TypeScript as is.

import { test } from "node:test";
import assert from "node:assert/strict";
import { proposeRule } from "./propose.ts";

test("a command proposes its program (and subcommand) and *", () => {
  const cases: [string, string][] = [
    ["go test ./...", "go test *"],
    ["npm run build -- --watch", "npm run *"],
    ["git status", "git status *"],
    ["touch made-by-bash", "touch *"],
    ["ls -la && rm -rf x", "ls *"],
    ["CGO_ENABLED=0 go build ./cmd/x", "go build *"],
    ["go -C x test", "go *"],
    ["sudo rm -rf /", "sudo rm -rf /"],
    ["bash -c 'ls'", "bash -c 'ls'"],
    ["$(id) x", "$(id) x"],
  ];
  for (const [command, want] of cases) {
    const r = proposeRule("Bash", { command }, "claude", "/w");
    assert.equal(r.command, want, command);
    assert.equal(r.tool, "Bash");
    assert.equal(r.agent, "claude");
    assert.equal(r.action, "allow");
  }
});

test("a file tool proposes the file's directory", () => {
  assert.deepEqual(proposeRule("Edit", { file_path: "/w/internal/x.go" }, "claude", "/w").paths, ["internal/*"]);
  assert.deepEqual(proposeRule("Write", { file_path: "/w/README.md" }, "claude", "/w").paths, ["*"]);
  assert.deepEqual(proposeRule("Edit", { file_path: "/etc/hosts" }, "claude", "/w").paths, ["/etc/*"]);
  assert.equal(proposeRule("Edit", { file_path: "/w/x" }, "", "/w").agent, undefined);
});
