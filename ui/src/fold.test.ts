// The dashboard's fold against frames recorded from a real Claude Code session
// (internal/e2e/claude TestRecordFrames -update writes testdata/frames). Run by
// `go test ./ui/` with the pinned Node 22, which runs TypeScript as is.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { Fold, type ChatView, type Item } from "./fold.ts";

type Frame = { type: string; [k: string]: unknown };

function frames(name: string): Frame[] {
  const text = readFileSync(new URL(`../testdata/frames/${name}`, import.meta.url), "utf8");
  return text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l));
}

// fold replays frames; stop, when given, ends the replay after the first frame it matches.
function fold(fs: Frame[], stop?: (f: Frame) => boolean) {
  const acks: string[] = [];
  const cards: string[] = [];
  const f = new Fold({ ack: (id) => acks.push(id), announce: (id) => cards.push(id) });
  for (const fr of fs) {
    f.apply(fr as never, false);
    if (stop?.(fr)) break;
  }
  return { f, acks, cards };
}

const session = frames("claude-stream.jsonl");
const of = <K extends Item["kind"]>(items: Item[], kind: K) => items.filter((i): i is Extract<Item, { kind: K }> => i.kind === kind);

test("every message is shown once, submitted, in the order sent", () => {
  const { f } = fold(session);
  const users = of(f.view.items, "user");
  assert.deepEqual(users.map((u) => u.message_id), ["m_write", "m_edit", "m_bash", "m_ask", "m_slow", "m_next"]);
  for (const u of users) assert.equal(f.view.receipts[u.message_id]?.state, "submitted", u.message_id);
  assert.equal(f.view.queued.length, 0);
  assert.equal(f.view.turnActive, false);
});

test("AskUserQuestion is shown as its question card, not as a tool too", () => {
  const { f } = fold(session);
  const tools = of(f.view.items, "tool").map((t) => t.title);
  assert.ok(!tools.includes("AskUserQuestion"), `tools: ${tools}`);
  assert.equal(tools.length, 4, `tools: ${tools}`); // Write, Read, Edit, Bash
  const q = of(f.view.items, "question");
  assert.equal(q.length, 1);
  assert.equal(q[0].state, "resolved");
  assert.deepEqual(q[0].answers, { "Which greeting?": "good day" });
});

test("Allow always says what it does, and the mode it set is said in the conversation", () => {
  const { f } = fold(session);
  const perms = of(f.view.items, "permission");
  assert.deepEqual(perms.map((p) => p.name), ["Write", "Edit", "Bash"]);
  assert.ok(perms.every((p) => p.state === "resolved"));
  const edit = perms[1];
  assert.equal(edit.chosen, "allow_always");
  assert.match(edit.options.find((o) => o.kind === "allow_always")!.label, /Accept edits mode/);
  assert.match(perms[2].options.find((o) => o.kind === "allow_always")!.label, /Bash\(python3 -c 'print\(1\)'\)/);
  const notices = of(f.view.items, "notice").map((n) => n.text);
  assert.deepEqual(notices, ["Mode changed to Accept edits."]);
  const at = f.view.items.findIndex((i) => i.kind === "notice");
  assert.ok(at > f.view.items.indexOf(edit), "the mode change follows the card that made it");
  assert.equal(f.view.mode?.current, "acceptEdits");
});

test("the Edit card holds what will change before it is answered", () => {
  const { f } = fold(session, (fr) => fr.type === "permission_request" && (fr.tool as { name: string }).name === "Edit");
  const edit = of(f.view.items, "permission").find((p) => p.name === "Edit")!;
  assert.equal(edit.state, "open");
  const input = edit.input as { old_string: string; new_string: string };
  assert.equal(input.old_string, '\treturn "hello"');
  assert.equal(input.new_string, '\treturn "hello, world"');
});

test("a message sent during an answer waits after it, then takes its place when delivered", () => {
  const queuedAt = (fr: Frame) => fr.type === "delivery" && fr.message_id === "m_next" && fr.state === "queued";
  const mid = fold(session, queuedAt).f.view;
  assert.deepEqual(mid.queued.map((q) => (q.kind === "user" ? q.message_id : "")), ["m_next"]);
  assert.ok(!mid.items.some((i) => i.kind === "user" && i.message_id === "m_next"));
  assert.equal(mid.receipts["m_next"]?.state, "queued");
  const { f } = fold(session);
  const items = f.view.items;
  const slowAnswer = items.findIndex((i) => i.kind === "agent" && i.text.includes("eight"));
  const next = items.findIndex((i) => i.kind === "user" && i.message_id === "m_next");
  assert.ok(slowAnswer >= 0 && next > slowAnswer, `the queued message (${next}) follows the whole answer (${slowAnswer})`);
  const answer = items[slowAnswer];
  assert.equal(answer.kind === "agent" && answer.text, "one two three four five six seven eight");
});

test("every message is acknowledged; every card announced once", () => {
  const { acks, cards } = fold(session);
  assert.deepEqual([...new Set(acks)].sort(), ["m_ask", "m_bash", "m_edit", "m_next", "m_slow", "m_write"]);
  assert.equal(cards.length, 4);
});

const acp = frames("claude-acp.jsonl");

test("a plan is one item per turn, updated in place within it (Claude through its ACP adapter)", () => {
  const { f } = fold(acp);
  const order = f.view.items.filter((i) => i.kind === "plan" || i.kind === "user").map((i) => i.kind);
  assert.deepEqual(order, ["user", "plan", "user", "plan", "user"]);
  const plans = of(f.view.items, "plan");
  assert.equal(plans[0].entries[0].status, "in_progress", "the first turn's plan is its second update");
  assert.deepEqual(plans[1].entries.map((e) => e.status), ["completed", "in_progress"]);
});

test("provisional text is shown apart, replaced by each draft and ended by the final words or the turn's end", () => {
  const f = new Fold();
  const t = "t_1";
  f.apply({ type: "turn_status", thread: t, seq: 1, active: true, message_id: "m1" } as never, false);
  f.apply({ type: "agent_draft", thread: t, text: "The first", after_seq: 1 } as never, false);
  assert.equal(f.view.draft, "The first");
  assert.equal(of(f.view.items, "agent").length, 0, "a draft is no answer item");
  f.apply({ type: "agent_draft", thread: t, text: "The first line", after_seq: 1 } as never, false);
  assert.equal(f.view.draft, "The first line");
  f.apply({ type: "agent_chunk", thread: t, seq: 2, text: "The first line, whole." } as never, false);
  assert.equal(f.view.draft, undefined);
  assert.deepEqual(of(f.view.items, "agent").map((a) => a.text), ["The first line, whole."]);
  f.apply({ type: "agent_draft", thread: t, text: "More", after_seq: 2 } as never, false);
  f.apply({ type: "prompt_done", thread: t, seq: 3, stop_reason: "end_turn", message_id: "m1" } as never, false);
  assert.equal(f.view.draft, undefined);
});

test("a draft that only grew comes as what it adds, and only onto the draft shown", () => {
  const f = new Fold();
  const t = "t_1";
  f.apply({ type: "turn_status", thread: t, seq: 1, active: true, message_id: "m1" } as never, false);
  f.apply({ type: "agent_draft", thread: t, text: "The first", after_seq: 1, id: 1 } as never, false);
  f.apply({ type: "agent_draft", thread: t, text: " line", after_seq: 1, id: 2, extends: 1 } as never, false);
  assert.equal(f.view.draft, "The first line");
  f.apply({ type: "agent_draft", thread: t, text: " and more", after_seq: 1, id: 4, extends: 3 } as never, false);
  assert.equal(f.view.draft, undefined, "an append onto a draft missed: nothing rather than a guess");
  f.apply({ type: "agent_draft", thread: t, text: " again", after_seq: 1, id: 5, extends: 4 } as never, false);
  assert.equal(f.view.draft, undefined, "nor onto the one after it");
  f.apply({ type: "agent_draft", thread: t, text: "Whole again", after_seq: 1, id: 6 } as never, false);
  f.apply({ type: "agent_draft", thread: t, text: ", growing", after_seq: 1, id: 7, extends: 6 } as never, false);
  assert.equal(f.view.draft, "Whole again, growing");
  f.apply({ type: "agent_chunk", thread: t, seq: 2, text: "Whole again, growing." } as never, false);
  assert.equal(f.view.draft, undefined);
  f.apply({ type: "agent_draft", thread: t, text: " more", after_seq: 2, id: 8, extends: 7 } as never, false);
  assert.equal(f.view.draft, undefined, "the final words ended the draft it extends");
});

test("a stop taken on any screen shows stopping until the agent's cancelled end", () => {
  const th = { thread: "t1", ts: "2026-12-04T20:00:00.000Z" };
  const { f } = fold([
    { type: "turn_status", ...th, seq: 1, active: true, message_id: "m1" },
    { type: "agent_chunk", ...th, seq: 2, text: "working on it" },
  ]);
  assert.equal(f.view.stopping, false, "no stop asked yet");
  f.apply({ type: "turn_status", ...th, seq: 3, active: true, message_id: "m1", stopping: true } as never, false);
  assert.equal(f.view.stopping, true, "the logged stopping status");
  assert.equal(f.view.turnActive, true, "the turn runs until the agent ends it");
  // On a reconnect the restated status (no seq) keeps what the log said.
  f.apply({ type: "turn_status", active: true, message_id: "m1" } as never, false);
  assert.equal(f.view.stopping, true, "restated on connect");
  f.apply({ type: "prompt_done", ...th, seq: 4, stop_reason: "cancelled", message_id: "m1" } as never, false);
  f.apply({ type: "turn_status", ...th, seq: 5, active: false } as never, false);
  assert.equal(f.view.stopping, false);
  assert.equal(f.view.turnActive, false);
  assert.ok(of(f.view.items, "notice").some((n) => n.text === "Stopped."), "Stopped. follows");
  // The next turn starts without it.
  f.apply({ type: "turn_status", ...th, seq: 6, active: true, message_id: "m2" } as never, false);
  assert.equal(f.view.stopping, false, "a new turn is not stopping");
});

test("a card whose answer was refused while its agent is not running stays open; one answered elsewhere closes", () => {
  const card = (id: string): Frame => ({ type: "permission_request", seq: 1, request_id: id, tool: { name: "Bash", input: {} }, options: [{ option_id: "allow", name: "Allow", kind: "allow_once" }] });
  const { f } = fold([card("r1"), card("r2")]);
  f.apply({ type: "error", code: "agent_error", ref: "r1", message: "the agent is not running" } as never, false);
  f.apply({ type: "error", code: "card_closed", ref: "r2", message: "card is no longer open" } as never, false);
  const perms = of(f.view.items, "permission");
  assert.equal(perms[0].state, "open");
  assert.equal(perms[0].note, "the agent is not running");
  assert.ok(!f.closedCards.has("r1"));
  assert.equal(perms[1].state, "closed");
  assert.ok(f.closedCards.has("r2"));
});

test("a message a schedule or a trigger sent says which", () => {
  const { f } = fold([
    { type: "user_message", seq: 1, message_id: "sch_1@946890000", text: "report", from: { channel: "schedule", chat: "sch_1" }, origin: { kind: "schedule", id: "sch_1", name: "nightly" } },
    { type: "user_message", seq: 2, message_id: "m1", text: "hi", from: { channel: "web", chat: "c" } },
  ]);
  const users = of(f.view.items, "user");
  assert.deepEqual(users.map((u) => u.origin), [{ kind: "schedule", id: "sch_1", name: "nightly" }, undefined]);
});

// The table both folds are held to (testdata/views.json): frame sequences and
// the view each must fold them to, in a neutral shape the Go fold
// (internal/fold) writes the same way. PARLEY_UPDATE_VIEWS=1 rewrites the
// expected views from this fold; read the difference before committing it.
type ViewCase = { name: string; frames?: string; upto?: number; events?: Frame[]; view?: unknown };

function neutral(v: ChatView) {
  const line = (it: Item): string => {
    switch (it.kind) {
      case "user":
        return `user ${it.message_id}${it.from ? ` (${it.from})` : ""}: ${it.text}${it.files?.length ? ` · files: ${it.files.map((f) => f.path ?? f.name).join(", ")}` : ""}`;
      case "agent":
      case "thought":
        return `${it.kind}: ${it.text}`;
      case "tool":
        return `tool ${it.title} · ${it.tool} · ${it.status}${it.output ? ` · output: ${it.output}` : ""}${it.diffs?.length ? ` · diffs: ${it.diffs.map((d) => d.path).join(", ")}` : ""}${it.locations?.length ? ` · at: ${it.locations.map((l) => l.path + (l.line ? `:${l.line}` : "")).join(", ")}` : ""}`;
      case "plan":
        return `plan: ${it.entries.map((e) => `[${e.status}] ${e.content}`).join("; ")}`;
      case "permission":
        return `permission ${it.request_id} ${it.name}: ${it.title} · ${it.state}${it.chosen ? ` · chose ${it.chosen}` : ""}${it.note ? ` · ${it.note}` : ""}${it.diffs?.length ? ` · diffs: ${it.diffs.map((d) => `${d.path} → ${d.new_text}`).join(", ")}` : ""} · options: ${it.options.map((o) => `${o.id}=${o.label}`).join(", ")}`;
      case "question": {
        const answers = Object.keys(it.answers ?? {}).sort().map((q) => { const a = it.answers![q]; return `${q} → ${Array.isArray(a) ? `[${a.join(", ")}]` : a}`; });
        return `question ${it.request_id}: ${it.questions.map((q) => q.question).join(" / ")} · ${it.state}${answers.length ? ` · ${answers.join("; ")}` : ""}${it.response ? ` · said: ${it.response}` : ""}${it.note ? ` · ${it.note}` : ""}`;
      }
      case "notice":
        return `notice ${it.level}: ${it.text}`;
      case "handback":
        return `handback: ${it.command}`;
      case "usage":
        return `usage: in ${it.usage.input_tokens ?? 0} · out ${it.usage.output_tokens ?? 0} · $${it.usage.cost_usd ?? 0}`;
    }
  };
  const receipts: Record<string, string> = {};
  for (const id of Object.keys(v.receipts).sort()) receipts[id] = v.receipts[id].state + (v.receipts[id].detail ? `: ${v.receipts[id].detail}` : "");
  const u = v.usage;
  const model = v.mode?.config.find((o) => o.id === "model");
  return {
    items: v.items.map(line),
    queued: v.queued.map(line),
    receipts,
    turn: !v.turnActive ? "idle" : v.stopping ? "stopping" : "active",
    mode: v.mode ? `${v.mode.current} of ${v.mode.available.map((m) => m.id).join(", ")}` : "",
    // As the model select shows it (controls.tsx; chat.Mode.ModelName in Go).
    model: model ? model.values?.find((x) => x.id === model.current)?.name || model.current : "",
    commands: v.commands.map((c) => c.name).join(", "),
    usage: u ? `in ${u.input_tokens ?? 0} · out ${u.output_tokens ?? 0} · $${u.cost_usd ?? 0} · context ${u.context_tokens ?? 0}/${u.context_window ?? 0}` : "",
    starting: v.starting !== undefined,
    draft: v.draft ?? "",
  };
}

const viewsURL = new URL("../testdata/views.json", import.meta.url);
const table: { cases: ViewCase[] } = JSON.parse(readFileSync(viewsURL, "utf8"));

const foldCase = (c: ViewCase) => neutral(fold(c.frames ? frames(c.frames).slice(0, c.upto) : c.events!).f.view);

if (process.env.PARLEY_UPDATE_VIEWS) {
  for (const c of table.cases) c.view = foldCase(c);
  writeFileSync(viewsURL, JSON.stringify(table, null, 1) + "\n");
}

for (const c of table.cases) {
  test(`shared view: ${c.name}`, () => assert.deepEqual(foldCase(c), c.view));
}

test("a notice is shown in the conversation, with its level and who said it", () => {
  const n = { type: "notice", thread: "t_1", seq: 900, ts: "2026-12-06T10:00:00.000Z", text: "The build is green.", level: "done", from: "agent" };
  const { f } = fold([...session, n]);
  const ns = of(f.view.items, "notice").filter((i) => i.text === "The build is green.");
  assert.equal(ns.length, 1);
  assert.equal(ns[0].level, "done");
  assert.equal(ns[0].from, "the agent");
  const { f: g } = fold([{ ...n, seq: 901, from: "cli", level: "error", text: "CI failed" }]);
  const m = of(g.view.items, "notice");
  assert.equal(m.length, 1);
  assert.equal(m[0].from, "a script");
  assert.equal(m[0].level, "error");
});

test("a watched terminal's permission card has no buttons and closes as answered there", () => {
  const { f } = fold([
    { type: "permission_request", thread: "t1", seq: 1, request_id: "terminal-1", tool: { name: "Bash", title: "touch made", tool_call_id: "toolu_1" }, options: [], elsewhere: "terminal" },
  ]);
  const [card] = of(f.view.items, "permission");
  assert.equal(card.elsewhere, "terminal");
  assert.deepEqual(card.options, []);
  assert.equal(card.state, "open");
  f.apply({ type: "permission_resolved", thread: "t1", seq: 2, request_id: "terminal-1", reason: "answered in the terminal" } as never, false);
  const [closed] = of(f.view.items, "permission");
  assert.equal(closed.state, "resolved");
  assert.equal(closed.note, "in the terminal");
});
