// The conversation folded from a thread's events: what a person sees of a chat,
// computed from the server's frames alone. Pure: no DOM, no storage, no socket
// (the store owns those and calls in), so src/fold.test.ts replays recorded
// frames of a real Claude Code session through it (go test ./ui/ runs that).
// Its Go twin, internal/fold (what parley chat draws), folds the same frames
// by the same rules, held to this one by testdata/views.json, which both
// replay:
//   - a plan is one item per turn: a plan event updates the plan shown since
//     the person's last message, or adds one after it;
//   - a tool call the conversation shows as its own card (AskUserQuestion, as
//     its question card) is not shown as a tool too, unless it fails;
//   - a mode change after the first mode is said in the conversation;
//   - a message queued behind a running turn is shown after the answer, and
//     takes its place in the conversation when it is delivered.
//   - a receipt without a seq never moves a message's receipt back, and an
//     error about a message the agent has leaves its receipt true;
//   - a card answered elsewhere keeps its answer when this screen's own
//     answer is then refused as too late.
// Only type imports: Node runs this file as is (type stripping).

import type { Usage } from "./chat/usage";
import type { Answers, Command, ConfigOption, Diff, Location, ModeOption, Origin, PermissionOption, PlanEntry, QuestionItem, ServerEvent } from "./protocol";

export type Receipt = { state: "sending" | "queued" | "delivering" | "submitted" | "failed" | "unknown"; detail?: string };

export type CardState = "open" | "answering" | "resolved" | "cancelled" | "closed";

// A file attached to a message as the transcript shows it: url is this page's
// own copy of an image it sent (the server's copy is asked by path).
export type Shown = { name: string; path?: string; mime_type?: string; size?: number; url?: string };

export type Item =
  | { kind: "user"; key: string; message_id: string; text: string; from?: string; ts?: string; files?: Shown[]; origin?: Origin }
  | { kind: "agent"; key: string; text: string; ts?: string }
  | { kind: "thought"; key: string; text: string }
  | {
      kind: "tool";
      key: string;
      id: string;
      title: string;
      tool: string;
      status: string;
      input?: unknown;
      output?: string;
      diffs?: Diff[];
      locations?: Location[];
    }
  | { kind: "plan"; key: string; entries: PlanEntry[] }
  | {
      kind: "permission";
      key: string;
      request_id: string;
      title: string;
      name: string;
      input?: unknown;
      // The tool call asked about, and the changes it proposes when the agent
      // sent them with it (ACP agents' diffs): shown before it is answered.
      tool_call_id?: string;
      diffs?: Diff[];
      options: PermissionOption[];
      // Where it is answered instead of here ("terminal": a watched session's, no options).
      elsewhere?: string;
      state: CardState;
      chosen?: string;
      note?: string;
    }
  | {
      kind: "question";
      key: string;
      request_id: string;
      questions: QuestionItem[];
      state: CardState;
      answers?: Answers;
      response?: string;
      note?: string;
    }
  | { kind: "notice"; key: string; level: "error" | "info" | "done"; text: string; ts?: string; from?: string }
  // A turn's tokens, cost and context fill, under the turn.
  | { kind: "usage"; key: string; usage: Usage; ts?: string }
  // The session handed to a terminal: the command that goes on with it there.
  | { kind: "handback"; key: string; command: string; ts?: string };

// The folded chat: everything a layout draws of the conversation.
export type ChatView = {
  items: Item[];
  // Messages queued behind the running turn, drawn after it.
  queued: Item[];
  receipts: Record<string, Receipt>;
  turnActive: boolean;
  // Stop was asked and the turn has not ended yet: "stopping…" until it has.
  stopping?: boolean;
  // When the running turn began (its turn_status's time), for the elapsed time.
  turnSince?: string;
  mode?: { current: string; available: ModeOption[]; config: ConfigOption[] };
  commands: Command[];
  usage?: Usage;
  // When the agent's process began to start, while it has not started yet.
  starting?: string;
  // Provisional text (agent_draft): what a terminal agent's screen shows of
  // the answer before its final words come, drawn apart after the items.
  draft?: string;
  // The draft shown's id: an append (extends) adds to it alone.
  draftID?: number;
};

// Events of the log that end the provisional text shown before them.
const draftEnds = new Set(["agent_chunk", "thought_chunk", "tool_call", "permission_request", "question", "prompt_done", "turn_status"]);

// What the fold asks of its owner: things outside the conversation.
export interface FoldSink {
  // A message the server has (user_message, delivery or its failure): out of the outbox.
  ack(messageID: string): void;
  // A card was opened; replaying says it is not news.
  announce(requestID: string, title: string, body: string, replaying: boolean): void;
}

// Tools shown as their own card, by the tool call's title (Claude Code's tool name).
const ownCard = new Set(["AskUserQuestion"]);

export class Fold {
  view: ChatView = emptyView();
  private index = new Map<string, number>(); // item key → position in items
  private lastKind = ""; // the kind of the last streamed item, to fold chunks
  private hiddenTools = new Map<string, string>(); // tool call id → its title
  private asking = new Map<string, string>(); // tool call id → the key of the permission card about it
  private seq = 0; // keys for items of events without a seq
  // Cards this client learnt are no longer open without a *_resolved event.
  readonly closedCards = new Set<string>();

  private sink: FoldSink;

  constructor(sink: FoldSink = { ack() {}, announce() {} }) {
    this.sink = sink;
  }

  reset() {
    this.view = emptyView();
    this.index.clear();
    this.lastKind = "";
    this.hiddenTools.clear();
    this.asking.clear();
    this.closedCards.clear();
  }

  has(key: string): boolean {
    return this.index.has(key) || this.view.queued.some((q) => q.key === key);
  }

  item(key: string): Item | undefined {
    const i = this.index.get(key);
    return i === undefined ? this.view.queued.find((q) => q.key === key) : this.view.items[i];
  }

  // user shows a person's message: after the running turn while one runs.
  user(it: Extract<Item, { kind: "user" }>) {
    if (this.has(it.key)) return;
    if (this.view.turnActive) {
      this.view = { ...this.view, queued: this.view.queued.concat(it) };
      return;
    }
    this.push(it);
  }

  // unqueue puts a queued message in its place in the conversation: now.
  private unqueue(messageID: string) {
    const q = this.view.queued.find((x) => x.kind === "user" && x.message_id === messageID);
    if (!q) return;
    this.view = { ...this.view, queued: this.view.queued.filter((x) => x !== q) };
    this.push(q);
    this.lastKind = "user";
  }

  // stopping says a stop was asked of the running turn.
  stopping() {
    this.view = { ...this.view, stopping: true };
  }

  receipt(messageID: string, r: Receipt) {
    this.view = { ...this.view, receipts: { ...this.view.receipts, [messageID]: r } };
  }

  // apply folds one event into the conversation.
  apply(ev: ServerEvent, replaying: boolean) {
    if (ev.seq && (this.view.draft !== undefined || this.view.draftID !== undefined) && draftEnds.has(ev.type)) {
      this.view = { ...this.view, draft: undefined, draftID: undefined };
    }
    const v = this.view;
    switch (ev.type) {
      case "agent_draft": {
        // Whole, or (extends) what it adds to the draft shown; an append to
        // a draft not shown (one was missed) shows none until a whole one.
        const onto = !ev.extends || ev.extends === v.draftID;
        const text = !ev.extends ? ev.text : onto ? (v.draft ?? "") + ev.text : "";
        this.view = { ...v, draft: text || undefined, draftID: onto ? ev.id : undefined };
        break;
      }
      case "user_message":
        this.sink.ack(ev.message_id);
        if (this.has("u:" + ev.message_id)) {
          // Sent from this page: the server's time is when it was said, its
          // text what the agent got (the saved files' paths added).
          const it = this.item("u:" + ev.message_id);
          if (it?.kind === "user" && ((!it.ts && ev.ts) || it.text !== ev.text || ev.files)) {
            const files = ev.files ? ev.files.map((f, i) => ({ ...f, url: it.files?.[i]?.url })) : it.files;
            this.replaceAny({ ...it, ts: it.ts ?? ev.ts, text: ev.text, files });
          }
        } else {
          this.user({ kind: "user", key: "u:" + ev.message_id, message_id: ev.message_id, text: ev.text, from: ev.from?.channel, ts: ev.ts, ...(ev.files ? { files: ev.files } : {}), ...(ev.origin ? { origin: ev.origin } : {}) });
        }
        if (!v.receipts[ev.message_id]) this.receipt(ev.message_id, { state: "queued" });
        if (this.index.has("u:" + ev.message_id)) this.lastKind = "user";
        break;
      case "delivery":
        this.sink.ack(ev.message_id);
        // A receipt without a seq (the answer to a resend) may be overtaken
        // by the log's: it never moves a receipt back.
        if (!ev.seq && rank(ev.state) < rank(v.receipts[ev.message_id]?.state)) break;
        this.receipt(ev.message_id, { state: ev.state, detail: ev.detail });
        if (ev.state !== "queued") this.unqueue(ev.message_id);
        break;
      case "agent_chunk":
        this.appendText("agent", ev.text, ev.ts);
        break;
      case "thought_chunk":
        this.appendText("thought", ev.text);
        break;
      case "tool_call":
        if (ownCard.has(ev.title)) {
          this.hiddenTools.set(ev.tool_call_id, ev.title);
          break;
        }
        this.upsert("t:" + ev.tool_call_id, () => ({ kind: "tool", key: "t:" + ev.tool_call_id, id: ev.tool_call_id, title: ev.title, tool: ev.kind, status: ev.status, input: ev.input, locations: ev.locations }), (it) =>
          it.kind === "tool" ? { ...it, title: ev.title || it.title, tool: ev.kind || it.tool, status: ev.status || it.status, input: ev.input ?? it.input } : it,
        );
        break;
      case "tool_call_update": {
        const hidden = this.hiddenTools.get(ev.tool_call_id);
        if (hidden && ev.status !== "failed") break;
        if (ev.diffs?.length) {
          const card = this.asking.get(ev.tool_call_id);
          const it = card ? this.item(card) : undefined;
          if (card && it?.kind === "permission" && it.state === "open") this.replace(card, { ...it, diffs: ev.diffs });
        }
        this.upsert("t:" + ev.tool_call_id, () => ({ kind: "tool", key: "t:" + ev.tool_call_id, id: ev.tool_call_id, title: ev.title || hidden || "tool", tool: "other", status: ev.status ?? "in_progress", output: ev.output, diffs: ev.diffs, locations: ev.locations }), (it) =>
          it.kind === "tool"
            ? { ...it, status: ev.status || it.status, title: ev.title || it.title, output: ev.output !== undefined ? ev.output : it.output, diffs: ev.diffs ?? it.diffs, locations: ev.locations ?? it.locations }
            : it,
        );
        break;
      }
      case "plan": {
        // The plan comes whole each time: update this turn's plan in place.
        let last: Item | undefined;
        for (let i = v.items.length - 1; i >= 0 && !last; i--) if (v.items[i].kind === "plan" || v.items[i].kind === "user") last = v.items[i];
        if (last && last.kind === "plan") this.replace(last.key, { ...last, entries: ev.entries });
        else this.push({ kind: "plan", key: "p:" + (ev.seq ?? this.next()), entries: ev.entries });
        break;
      }
      case "permission_request": {
        const title = ev.tool?.title || ev.tool?.name || "permission";
        const call = ev.tool?.tool_call_id;
        const tool = call ? this.item("t:" + call) : undefined;
        if (call) this.asking.set(call, "c:" + ev.request_id);
        // The agent's diffs of the call, else parley's (a Write over an existing file).
        const diffs = tool?.kind === "tool" && tool.diffs?.length ? tool.diffs : ev.diffs?.length ? ev.diffs : undefined;
        this.upsert("c:" + ev.request_id, () => ({ kind: "permission", key: "c:" + ev.request_id, request_id: ev.request_id, title, name: ev.tool?.name ?? "", input: ev.tool?.input, tool_call_id: call, diffs, options: ev.options ?? [], elsewhere: ev.elsewhere, state: "open" }),
          (it) => (it.kind === "permission" && ev.restated && (it.state === "answering" || it.state === "closed") ? { ...it, state: "open" } : it));
        if (ev.restated) this.closedCards.delete(ev.request_id);
        this.sink.announce(ev.request_id, "Permission needed", ev.tool?.title || ev.tool?.name || "", replaying);
        break;
      }
      case "permission_resolved":
        // Answered by the person's rule: the note names it (its message to the agent names it again).
        this.patchCard(ev.request_id, { state: ev.cancelled ? "cancelled" : "resolved", chosen: ev.option_id, note: ev.rule ? `by ${ev.rule}` : ev.reason && !ev.cancelled ? ev.reason.replace(/^answered /, "") : resolvedBy(ev.by, ev.message) });
        break;
      case "question":
        this.upsert("c:" + ev.request_id, () => ({ kind: "question", key: "c:" + ev.request_id, request_id: ev.request_id, questions: ev.questions ?? [], state: "open" }),
          (it) => (it.kind === "question" && ev.restated && (it.state === "answering" || it.state === "closed") ? { ...it, state: "open" } : it));
        if (ev.restated) this.closedCards.delete(ev.request_id);
        this.sink.announce(ev.request_id, "Question", ev.questions?.[0]?.question ?? "", replaying);
        break;
      case "question_resolved":
        this.patchCard(ev.request_id, { state: ev.cancelled ? "cancelled" : "resolved", answers: ev.answers, response: ev.response, note: resolvedBy(ev.by) });
        break;
      case "mode": {
        const available = ev.available ?? v.mode?.available ?? [];
        if (v.mode && v.mode.current !== ev.current && ev.current) {
          const name = available.find((m) => m.id === ev.current)?.name ?? ev.current;
          this.push({ kind: "notice", key: "m:" + (ev.seq ?? this.next()), level: "info", text: `Mode changed to ${name}.`, ts: ev.ts });
          this.lastKind = "";
        }
        this.view = { ...this.view, mode: { current: ev.current, available, config: ev.config_options ?? v.mode?.config ?? [] } };
        break;
      }
      case "commands":
        this.view = { ...v, commands: ev.commands ?? [] };
        break;
      case "usage": {
        const u: Usage = { input_tokens: ev.input_tokens, output_tokens: ev.output_tokens, cost_usd: ev.cost_usd, context_tokens: ev.context_tokens, context_window: ev.context_window };
        const turn = !!(u.input_tokens || u.output_tokens || u.cost_usd);
        // A context-only report (ACP's usage_update, mid-turn) keeps the turn's numbers.
        this.view = { ...v, usage: turn ? u : { ...v.usage, context_tokens: u.context_tokens, context_window: u.context_window } };
        if (turn) this.push({ kind: "usage", key: "u:" + (ev.seq ?? this.next()), usage: u, ts: ev.ts });
        break;
      }
      case "turn_status":
        // stopping: a stop was taken (from this screen or any other); a
        // logged status without it is a turn starting. The status restated
        // on connect (no seq) keeps what the log said.
        this.view = ev.active
          ? { ...v, turnActive: true, turnSince: v.turnSince ?? ev.ts, stopping: ev.stopping ? true : ev.seq === undefined ? v.stopping : false }
          : { ...v, turnActive: false, turnSince: undefined, stopping: false };
        break;
      case "prompt_done":
        this.view = { ...v, turnActive: false, turnSince: undefined, stopping: false };
        this.lastKind = "";
        if (ev.stop_reason && ev.stop_reason !== "end_turn") {
          this.push({ kind: "notice", key: "d:" + (ev.seq ?? this.next()), level: ev.stop_reason === "cancelled" ? "info" : "error", text: stopText(ev.stop_reason) });
        }
        break;
      case "error":
        if (ev.ref && this.index.has("c:" + ev.ref) && ev.code === "card_closed") {
          this.closedCards.add(ev.ref);
          // Answered elsewhere first: its resolution, when it came first, says more.
          const it = this.item("c:" + ev.ref);
          if ((it?.kind === "permission" || it?.kind === "question") && (it.state === "open" || it.state === "answering")) this.patchCard(ev.ref, { state: "closed", note: ev.message });
        } else if (ev.ref && this.index.has("c:" + ev.ref)) {
          // The answer was refused but the card is still open (its agent is
          // not running now): it stays answerable, saying why.
          this.patchCard(ev.ref, { state: "open", note: ev.message });
        } else if (ev.ref && this.has("u:" + ev.ref) && rank(v.receipts[ev.ref]?.state) < rank("delivering")) {
          // Refused before it was taken (busy, bad input): it failed, and says
          // why. An error about a message the agent has (a turn cut off) is
          // said below, and leaves its receipt true.
          this.sink.ack(ev.ref);
          this.receipt(ev.ref, { state: "failed", detail: ev.message });
          this.unqueue(ev.ref);
        } else {
          this.push({ kind: "notice", key: "e:" + (ev.seq ?? this.next()), level: "error", text: ev.message || ev.code });
        }
        break;
      case "notice":
        // Said to the person by the agent (notify_person) or a script (parley notify).
        this.push({ kind: "notice", key: "n:" + (ev.seq ?? this.next()), level: ev.level, text: ev.text, ts: ev.ts, from: ev.from === "cli" ? "a script" : "the agent" });
        break;
      case "session":
        if (ev.state === "starting") this.view = { ...v, starting: ev.ts || new Date().toISOString() };
        else if (ev.state !== "identified") this.view = { ...v, starting: undefined };
        if ((ev.state === "exited" && ev.detail) || ev.state === "restarted") {
          this.push({ kind: "notice", key: "s:" + (ev.seq ?? this.next()), level: "info", text: `session ${ev.state}${ev.detail ? `: ${ev.detail}` : ""}` });
        }
        if (ev.state === "handed_back") this.push({ kind: "handback", key: "h:" + (ev.seq ?? this.next()), command: ev.command ?? "", ts: ev.ts });
        break;
      case "thread_info":
        // A move says, in the conversation, what the new agent knows.
        if (ev.moved_from) this.push({ kind: "notice", key: "m:" + (ev.seq ?? this.next()), level: "info", text: movedText(ev.moved_from, ev.agent ?? "", ev.context_messages ?? 0) });
        break;
    }
  }

  // closeUnseen closes every card shown open that the server did not send again
  // on this connection: a stale card is never left clickable.
  closeUnseen(seen: Set<string>) {
    let changed = false;
    const items = this.view.items.map((it) => {
      if ((it.kind === "permission" || it.kind === "question") && (it.state === "open" || it.state === "answering") && !seen.has(it.request_id)) {
        changed = true;
        this.closedCards.add(it.request_id);
        return { ...it, state: "closed" as CardState, note: "no longer open" };
      }
      return it;
    });
    if (changed) this.view = { ...this.view, items };
  }

  patchCard(requestID: string, patch: Partial<Extract<Item, { kind: "permission" }>> | Partial<Extract<Item, { kind: "question" }>>) {
    const key = "c:" + requestID;
    const i = this.index.get(key);
    if (i === undefined) return;
    this.replace(key, { ...this.view.items[i], ...patch } as Item);
  }

  push(it: Item) {
    const items = this.view.items.concat(it);
    this.index.set(it.key, items.length - 1);
    this.lastKind = it.kind;
    this.view = { ...this.view, items };
  }

  private next(): string {
    return "n" + ++this.seq;
  }

  private replace(key: string, it: Item) {
    const i = this.index.get(key);
    if (i === undefined) return;
    const items = this.view.items.slice();
    items[i] = it;
    this.view = { ...this.view, items };
  }

  // replaceAny replaces an item shown in the conversation or among the queued.
  private replaceAny(it: Item) {
    if (this.index.has(it.key)) this.replace(it.key, it);
    else this.view = { ...this.view, queued: this.view.queued.map((q) => (q.key === it.key ? it : q)) };
  }

  private upsert(key: string, make: () => Item, update?: (it: Item) => Item) {
    const i = this.index.get(key);
    if (i === undefined) {
      this.push(make());
      return;
    }
    if (update) this.replace(key, update(this.view.items[i]));
  }

  private appendText(kind: "agent" | "thought", text: string, ts?: string) {
    const items = this.view.items;
    const last = items[items.length - 1];
    if (last && last.kind === kind && this.lastKind === kind) {
      this.replace(last.key, { ...last, text: last.text + text });
      return;
    }
    this.push(kind === "agent" ? { kind, key: "a:" + items.length, text, ts } : { kind, key: "h:" + items.length, text });
  }
}

// rank orders receipts: a later state never goes back to an earlier one.
function rank(state?: string): number {
  switch (state) {
    case "sending":
      return 1;
    case "queued":
      return 2;
    case "delivering":
      return 3;
    case "submitted":
    case "failed":
    case "unknown":
      return 4;
  }
  return 0;
}

function emptyView(): ChatView {
  return { items: [], queued: [], receipts: {}, turnActive: false, stopping: false, commands: [] };
}

// resolvedBy says where a card was answered ("from web", "from telegram: …").
function resolvedBy(by?: { channel: string; chat: string }, message?: string): string | undefined {
  const parts = [];
  if (by?.channel) parts.push(`from ${by.channel}`);
  if (message) parts.push(message);
  return parts.join(": ") || undefined;
}

function stopText(reason: string): string {
  switch (reason) {
    case "cancelled":
      return "Stopped.";
    case "max_tokens":
      return "The answer hit the length limit.";
    case "refusal":
      return "The agent refused.";
    default:
      return "The turn ended with an error.";
  }
}

// movedText says what a thread's move changed, in the conversation.
export function movedText(from: string, to: string, context: number): string {
  const given = context > 0
    ? `Your next message goes with the last ${context} message${context === 1 ? "" : "s"} of this thread, as context.`
    : "No earlier messages are given to it.";
  return `Moved from ${from} to ${to}. ${to} starts a fresh session in the same folder: it does not have ${from}'s memory of this conversation. ${given}`;
}
