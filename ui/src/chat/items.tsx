// The conversation's pieces (messages, tool cards, plan, permission and question
// cards), written once and used by both layouts: one card, one set of rules.

import { turnUsage } from "./usage";
import { memo } from "./memo";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import type { Item, Receipt, Store } from "../store";
import type { Shown } from "../fold";
import { highlight, render } from "../markdown";
import { tabHref } from "../review/tab";
import { lineDiff, proposedDiffs } from "./diff";
import { MakeRule } from "./rules";
import type { Diff } from "../protocol";

// copyText puts text on the clipboard (the Clipboard API where the page may use
// it, a selected textarea otherwise) and says so on the button for a moment.
export function copyText(text: string, button: HTMLElement) {
  const done = () => {
    button.dataset.copied = "1";
    button.textContent = "Copied";
    setTimeout(() => {
      delete button.dataset.copied;
      button.textContent = "Copy";
    }, 1500);
  };
  if (navigator.clipboard?.writeText) {
    navigator.clipboard.writeText(text).then(done, () => {});
    return;
  }
  const ta = document.createElement("textarea");
  ta.value = text;
  ta.style.position = "fixed";
  ta.style.opacity = "0";
  document.body.appendChild(ta);
  ta.select();
  try {
    if (document.execCommand("copy")) done();
  } finally {
    ta.remove();
  }
}

// Markdown renders sanitized Markdown; every code block gets a Copy button.
export const Markdown = memo(({ text }: { text: string }) => {
  const ref = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    ref.current?.querySelectorAll("pre").forEach((pre) => {
      if (pre.querySelector(":scope > button.copy")) return;
      const b = document.createElement("button");
      b.type = "button";
      b.className = "copy";
      b.textContent = "Copy";
      b.setAttribute("aria-label", "Copy the code");
      b.onclick = () => copyText(pre.querySelector("code")?.textContent ?? "", b);
      pre.appendChild(b);
    });
  }, [text]);
  return <div class="md" ref={ref} dangerouslySetInnerHTML={{ __html: render(text).trim() }} />;
});

// Time is when something was said: the hour and minute, the whole date on hover.
function Time({ ts }: { ts?: string }) {
  if (!ts) return null;
  const d = new Date(ts);
  if (isNaN(d.getTime())) return null;
  return (
    <time class="ts" dateTime={ts} title={d.toLocaleString()}>
      {d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}
    </time>
  );
}

// Working says the agent is on a turn, with the time it has taken so far; while
// a card above waits for the person (waiting), the turn is theirs to move, so
// it says that instead of counting.
export function Working({ since, stopping, waiting }: { since?: string; stopping?: boolean; waiting?: string }) {
  const [start] = useState(() => (since && !isNaN(Date.parse(since)) ? Math.min(Date.parse(since), Date.now()) : Date.now()));
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const s = Math.max(0, Math.floor((now - start) / 1000));
  const took = s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
  if (waiting && !stopping)
    return (
      <div class="working in-conv waiting-you" role="status" data-waiting={waiting}>
        waiting for you: {waiting === "question" ? "answer the question above" : "allow or deny above"}
      </div>
    );
  return (
    <div class="working in-conv" role="status" data-elapsed={s}>
      <span class="spinner" aria-hidden="true" /> {stopping ? "stopping…" : "working…"} {took}
    </div>
  );
}

// A person's own message: Markdown like the agent's; a long one folded.
const FOLD_CHARS = 700;
const FOLD_LINES = 12;

// Messages the person unfolded, by key: a queued message moves to its place
// when delivered and is drawn anew there; it stays as the person left it.
const unfolded = new Set<string>();

// FilesView shows a message's files: an image as a thumbnail (this page's
// own copy, else the server's from the thread's uploads folder), any other
// file by name until the message's text names its path.
function FilesView({ files, thread }: { files: Shown[]; thread?: string }) {
  return (
    <div class="files">
      {files.map((f, i) => {
        const src = f.url ?? (f.path && thread && f.mime_type?.startsWith("image/") ? `/api/threads/${encodeURIComponent(thread)}/uploads/${encodeURIComponent(f.name)}` : "");
        if (src) return <img key={i} class="upload" src={src} alt={f.path ?? f.name} title={f.path ?? f.name} loading="lazy" />;
        return f.path ? null : <span key={i} class="hint file">{f.name}</span>;
      })}
    </div>
  );
}

function UserText({ text, id }: { text: string; id: string }) {
  const long = text.length > FOLD_CHARS || text.split("\n").length > FOLD_LINES;
  const [open, setOpenState] = useState(unfolded.has(id));
  const setOpen = (o: boolean) => {
    if (o) unfolded.add(id);
    else unfolded.delete(id);
    setOpenState(o);
  };
  return (
    <>
      <div class={long && !open ? "folded" : undefined}>
        <Markdown text={text} />
      </div>
      {long && (
        <button type="button" class="link fold" onClick={() => setOpen(!open)} aria-expanded={open}>
          {open ? "Show less" : "Show more"}
        </button>
      )}
    </>
  );
}

const receiptText: Record<Receipt["state"], string> = {
  sending: "sending…",
  queued: "queued",
  delivering: "delivering…",
  submitted: "submitted",
  failed: "failed",
  unknown: "delivery unknown",
};

function ReceiptView({ r, onRetry }: { r?: Receipt; onRetry: () => void }) {
  if (!r) return null;
  return (
    <div class={`receipt r-${r.state}`} data-receipt={r.state} role="status">
      <span>{receiptText[r.state]}</span>
      {(r.state === "unknown" || r.state === "queued") && r.detail && <span class="detail">: {r.detail}</span>}
      {r.state === "failed" && (
        <>
          {r.detail && <span class="detail">: {r.detail}</span>}
          <button type="button" class="link" onClick={onRetry}>
            Retry
          </button>
        </>
      )}
    </div>
  );
}

// Starting says the agent's process is starting, with the time it has taken:
// a slow agent (OpenCode takes tens of seconds) is visibly on its way.
export function Starting({ since }: { since: string }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [since]);
  const s = Math.max(0, Math.floor((now - Date.parse(since)) / 1000));
  return (
    <span class="working" role="status" data-starting={s}>
      starting the agent… {isFinite(s) ? `${s} s` : ""}
    </span>
  );
}

function pretty(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

// ToolInput shows what a tool will do: a command line or a path when the input has
// one, the whole input (collapsed) always.
// Path lets a path break after its slashes, not inside a name, on a narrow screen.
export function Path({ path }: { path: string }) {
  const parts = path.split(/(?<=\/)/);
  return <>{parts.flatMap((p, i) => (i < parts.length - 1 ? [p, <wbr key={i} />] : [p]))}</>;
}

function ToolInput({ input, open, title }: { input: unknown; open?: boolean; title?: string }) {
  const o = input && typeof input === "object" ? (input as Record<string, unknown>) : {};
  let line = typeof o.command === "string" ? "$ " + o.command : typeof o.file_path === "string" ? o.file_path : typeof o.path === "string" ? o.path : typeof o.url === "string" ? o.url : "";
  const all = pretty(input);
  const file = typeof o.file_path === "string" && line === o.file_path;
  const said = !!line;
  if (title && line && !file && title.endsWith(line.replace(/^\$ /, ""))) line = ""; // the title says it already
  return (
    <>
      {line && <div class="cmdline">{file ? <a href={tabHref("files", line)} data-file-link={line}><Path path={line} /></a> : line.startsWith("$ ") ? line : <Path path={line} />}</div>}
      {typeof o.description === "string" && <div class="hint">{o.description}</div>}
      {all && (
        <details open={open && !said}>
          <summary>Input</summary>
          <pre class="io">{all}</pre>
        </details>
      )}
    </>
  );
}

// langOf names the highlight.js language of a file by its extension.
export function langOf(path: string): string {
  const ext = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase() ?? "";
  return ({ md: "", txt: "", htm: "html", mts: "ts", cts: "ts", cjs: "js", jsonc: "json" } as Record<string, string>)[ext] ?? ext;
}

// DiffView shows a change as a unified diff: removed lines (-), added lines (+)
// and the lines around them, each highlighted as its file's language. A file
// written anew (no old text) is all additions.
// A file that is there (exists) is never called new: empty, or with its
// content not shown (unshown says why), the change replaces it.
function DiffView({ path, old, now, exists, unshown }: { path: string; old?: string; now: string; exists?: boolean; unshown?: string }) {
  const lines = lineDiff(old ?? "", now);
  const lang = langOf(path);
  const added = lines.filter((l) => l.op === "add").length;
  const removed = lines.filter((l) => l.op === "del").length;
  return (
    <div class="diff" data-path={path}>
      <div class="diff-path">
        <a href={tabHref("files", path)} data-file-link={path}><Path path={path} /></a> <span class="diff-count">{unshown
            ? `replaces the file (its content is not shown: ${unshown}), ${added} lines`
            : old === undefined && !exists
              ? `new file, ${added} lines`
              : `+${added} −${removed}`}</span>
      </div>
      <pre class="hljs">
        {lines.map((l, i) => (
          <div key={i} class={`dl d-${l.op}`}>
            <span class="dm">{l.op === "add" ? "+ " : l.op === "del" ? "- " : "  "}</span>
            <span dangerouslySetInnerHTML={{ __html: highlight(l.text, lang) }} />
          </div>
        ))}
      </pre>
    </div>
  );
}

function Diffs({ diffs }: { diffs: Diff[] }) {
  return (
    <>
      {diffs.map((d, i) => (
        <DiffView key={i} path={d.path} old={d.old_text} now={d.new_text} exists={d.exists} unshown={d.unshown} />
      ))}
    </>
  );
}

const statusLabel: Record<string, string> = { pending: "pending", in_progress: "running", completed: "done", failed: "failed" };

function ToolCard({ it }: { it: Extract<Item, { kind: "tool" }> }) {
  return (
    <div class={`tool s-${it.status}`} data-tool={it.id}>
      <div class="tool-head">
        <span class="tool-kind">{it.tool || "tool"}</span>
        <span class="tool-title">{it.title}</span>
        <span class={`tool-status s-${it.status}`}>{statusLabel[it.status] ?? it.status}</span>
      </div>
      {it.input !== undefined && <ToolInput input={it.input} title={it.title} />}
      {it.diffs && <Diffs diffs={it.diffs} />}
      {it.output && (
        <details open={it.status === "failed"}>
          <summary>Output</summary>
          <pre class="io">{it.output}</pre>
        </details>
      )}
    </div>
  );
}

function PlanView({ it }: { it: Extract<Item, { kind: "plan" }> }) {
  return (
    <div class="plan" role="group" aria-label="Plan">
      <div class="plan-head">Plan</div>
      <ul>
        {it.entries.map((e, i) => (
          <li key={i} class={`pl-${e.status}`}>
            <input type="checkbox" disabled checked={e.status === "completed"} aria-label={e.status} />
            <span>{e.content}</span>
            {e.status === "in_progress" && <span class="pl-now"> (in progress)</span>}
          </li>
        ))}
      </ul>
    </div>
  );
}

function cardStateText(state: string, note?: string): string {
  switch (state) {
    case "answering":
      return "sending your answer…";
    case "resolved":
      return note ? `answered ${note}` : "answered";
    case "cancelled":
      return note ? `cancelled (${note})` : "cancelled";
    case "closed":
      return note ? `closed: ${note}` : "closed";
    default:
      return note ? `waiting for you (${note})` : "waiting for you";
  }
}

// shortLabel is an option's button text: an "allow always" that spells out
// its rule (Claude Code's: the command and where the rule is kept) says
// "Allow always", the rule one tap away.
function shortLabel(o: { kind: string; label: string }): string {
  return o.kind === "allow_always" && o.label.length > 24 ? "Allow always" : o.label;
}

function PermissionCard({ it, store }: { it: Extract<Item, { kind: "permission" }>; store: Store }) {
  const live = it.state === "open";
  // What will change, before it is allowed: the agent's diffs, or the change
  // the tool's input describes (Edit, MultiEdit, Write).
  const diffs = it.diffs?.length ? it.diffs : proposedDiffs(it.name, it.input);
  const long = it.options.filter((o) => shortLabel(o) !== o.label);
  const rid = (o: { id: string }) => `opt-${it.request_id}-${o.id}`;
  const allowOnce = it.options.find((o) => o.kind === "allow_once");
  return (
    <div class={`card perm c-${it.state}`} data-card={it.request_id} data-state={it.state} role="group" aria-label={`Permission: ${it.title}`}>
      <div class="card-head">
        <span class="card-kind">Permission</span>
        <span class="card-title"><Path path={it.title} /></span>
        <span class="card-state">{live && it.elsewhere ? `answer it in the ${it.elsewhere}` : cardStateText(it.state, it.note)}</span>
      </div>
      {diffs.length > 0 ? (
        <>
          <Diffs diffs={diffs} />
          <ToolInput input={it.input} title={it.title} />
        </>
      ) : (
        it.input !== undefined && <ToolInput input={it.input} title={it.title} open />
      )}
      <div class="options">
        {it.options.map((o) => (
          <button
            type="button"
            key={o.id}
            class={`opt k-${o.kind}${it.chosen === o.id ? " chosen" : ""}`}
            disabled={!live}
            aria-pressed={it.chosen === o.id}
            aria-describedby={shortLabel(o) !== o.label ? rid(o) : undefined}
            title={shortLabel(o) !== o.label ? o.label : undefined}
            onClick={() => store.answerPermission(it.request_id, o.id)}
          >
            {shortLabel(o)}
          </button>
        ))}
        {live && allowOnce && <MakeRule store={store} requestId={it.request_id} tool={it.name} input={it.input} allowOnce={allowOnce.id} />}
      </div>
      {long.map((o) => (
        <details class="opt-more" key={o.id} data-opt-more={o.id}>
          <summary>What “{shortLabel(o)}” does</summary>
          <p id={rid(o)} class="hint">{o.label}</p>
        </details>
      ))}
    </div>
  );
}

function answerText(a: string | string[] | undefined): string {
  return Array.isArray(a) ? a.join(", ") : a ?? "";
}

function QuestionCard({ it, store }: { it: Extract<Item, { kind: "question" }>; store: Store }) {
  const live = it.state === "open";
  const [picked, setPicked] = useState<Record<string, string[]>>({});
  const [own, setOwn] = useState<Record<string, string>>({});
  const submit = (answers: Record<string, string | string[]>) => store.answerQuestion(it.request_id, answers);
  const single = it.questions.length === 1 && !it.questions[0].multi_select;
  const ready = it.questions.every((q) => (picked[q.question]?.length ?? 0) > 0 || (own[q.question] ?? "").trim() !== "");
  const collect = () => {
    const a: Record<string, string | string[]> = {};
    for (const q of it.questions) {
      const text = (own[q.question] ?? "").trim();
      if (text) a[q.question] = text;
      else a[q.question] = q.multi_select ? picked[q.question] ?? [] : (picked[q.question] ?? [])[0];
    }
    return a;
  };
  return (
    <div class={`card question c-${it.state}`} data-card={it.request_id} data-state={it.state} role="group" aria-label="Question">
      <div class="card-head">
        <span class="card-kind">Question</span>
        <span class="card-state">{cardStateText(it.state, it.note)}</span>
      </div>
      {it.questions.map((q) => {
        const chosen = picked[q.question] ?? [];
        const answered = it.answers?.[q.question];
        return (
          <fieldset key={q.question} class="q" disabled={!live}>
            <legend>
              {q.header && <span class="q-header">{q.header}</span>}
              {q.question}
              {q.multi_select && <span class="q-multi"> (choose any)</span>}
            </legend>
            <div class="options">
              {q.options.map((o) => {
                const on = chosen.includes(o.label) || (Array.isArray(answered) ? answered.includes(o.label) : answered === o.label);
                return (
                  <button
                    type="button"
                    key={o.label}
                    class={`opt${on ? " chosen" : ""}`}
                    aria-pressed={on}
                    disabled={!live}
                    title={o.description}
                    onClick={() => {
                      if (single) {
                        submit({ [q.question]: o.label });
                        return;
                      }
                      const next = q.multi_select ? (chosen.includes(o.label) ? chosen.filter((x) => x !== o.label) : chosen.concat(o.label)) : [o.label];
                      setPicked({ ...picked, [q.question]: next });
                    }}
                  >
                    <span class="opt-label">{o.label}</span>
                    {o.description && <span class="opt-desc">{o.description}</span>}
                  </button>
                );
              })}
            </div>
            {live ? (
              <form
                class="own"
                onSubmit={(e) => {
                  e.preventDefault();
                  if (single && (own[q.question] ?? "").trim()) submit({ [q.question]: own[q.question].trim() });
                }}
              >
                <input
                  type="text"
                  aria-label={`Your own answer to: ${q.question}`}
                  placeholder="Or answer in your own words"
                  value={own[q.question] ?? ""}
                  onInput={(e) => setOwn({ ...own, [q.question]: (e.target as HTMLInputElement).value })}
                />
                {single && (
                  <button type="submit" class="opt" disabled={!(own[q.question] ?? "").trim()}>
                    Send
                  </button>
                )}
              </form>
            ) : (
              answered !== undefined && <div class="q-answer">Answer: {answerText(answered)}</div>
            )}
          </fieldset>
        );
      })}
      {live && !single && (
        <button type="button" class="opt primary" disabled={!ready} onClick={() => submit(collect())}>
          Submit answers
        </button>
      )}
      {it.response && <div class="q-answer">Response: {it.response}</div>}
    </div>
  );
}

// ItemView renders one conversation item; memoized on the item's identity, which the
// store changes only when that item changes.
// threadStatus is a thread's state as a person reads it, including open cards of the shown chat.
export function openCardKind(items: Item[]): "permission" | "question" | "" {
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i];
    if ((it.kind === "permission" || it.kind === "question") && (it.state === "open" || it.state === "answering")) return it.kind;
  }
  return "";
}

export const ItemView = memo(({ it, store, receipt, withdrawable }: { it: Item; store: Store; receipt?: Receipt; withdrawable?: boolean }) => {
  switch (it.kind) {
    case "user":
      return (
        <div class="msg user" data-message={it.message_id}>
          <div class="bubble">
            <UserText text={it.text} id={it.key} />
            {it.files?.length ? <FilesView files={it.files} thread={store.state.chat.thread?.id} /> : null}
          </div>
          <div class="meta">
            {it.origin && (
              <span class={`origin origin-${it.origin.kind}`} data-origin={it.origin.id} title={`Sent by ${it.origin.kind} ${it.origin.id}, not typed by a person`}>
                {it.origin.kind === "schedule" ? "⏱ schedule" : "⚡ trigger"} {it.origin.name || it.origin.id}
              </span>
            )}
            <Time ts={it.ts} />
            <ReceiptView r={receipt} onRetry={() => store.retry(it.message_id)} />
            {withdrawable && receipt?.state === "queued" && (
              <button type="button" class="link withdraw" onClick={() => store.withdraw(it.message_id)} title="Take it back: it is not sent to the agent">
                Withdraw
              </button>
            )}
          </div>
        </div>
      );
    case "agent":
      return (
        <div class="msg agent">
          <Markdown text={it.text} />
          <div class="meta">
            <Time ts={it.ts} />
            <button type="button" class="copy link" aria-label="Copy the answer" onClick={(e) => copyText(it.text, e.currentTarget as HTMLElement)}>
              Copy
            </button>
          </div>
        </div>
      );
    case "thought":
      return (
        <details class="thought">
          <summary>Thinking</summary>
          <div class="thought-text">{it.text}</div>
        </details>
      );
    case "tool":
      return <ToolCard it={it} />;
    case "plan":
      return <PlanView it={it} />;
    case "permission":
      return <PermissionCard it={it} store={store} />;
    case "question":
      return <QuestionCard it={it} store={store} />;
    case "usage":
      return (
        <div class="notice n-usage" role="status">
          {turnUsage(it.usage)}
        </div>
      );
    case "handback":
      return (
        <div class="notice n-info handback" role="status" data-handback="">
          <div>Handed back to a terminal. To continue there:</div>
          <div class="handback-command">
            <code data-handback-command="">{it.command}</code>
            <button type="button" class="copy link" aria-label="Copy the command" onClick={(e) => copyText(it.command, e.currentTarget as HTMLElement)}>
              Copy
            </button>
          </div>
        </div>
      );
    case "notice":
      return (
        <div class={`notice n-${it.level}`} role={it.level === "error" ? "alert" : "status"}>
          {it.from && <span class="notice-from">from {it.from}: </span>}
          {it.text}
        </div>
      );
  }
});

// JumpToLatest shows, while the person reads further up, how much arrived below.
export function JumpToLatest({ unseen, onJump }: { unseen: number; onJump: () => void }) {
  if (unseen <= 0) return null;
  return (
    <button type="button" class="jump" onClick={onJump} data-unseen={unseen}>
      ↓ Jump to latest ({unseen} new)
    </button>
  );
}

// PAGE is how many items are drawn at first; scrolling up (or the button) draws more.
// Long threads then open at once, and the Markdown of old turns is parsed on demand.
const PAGE = 150;

export function Conversation({ store, items, receipts, queued = [] }: { store: Store; items: Item[]; receipts: Record<string, Receipt>; queued?: Item[] }) {
  const chat = store.state.chat;
  const [loading, setLoading] = useState(false);
  const [limit, setLimit] = useState(PAGE);
  const ref = useRef<HTMLDivElement>(null);
  const anchor = useRef<{ h: number; top: number } | null>(null);
  const thread = store.state.chat.thread?.id;
  useEffect(() => setLimit(PAGE), [thread]);
  const start = Math.max(0, items.length - limit);
  const more = () => {
    const sc = ref.current?.closest(".scroll") as HTMLElement | null;
    if (sc) anchor.current = { h: sc.scrollHeight, top: sc.scrollTop };
    setLimit((l) => l + PAGE);
  };
  useEffect(() => {
    const sc = ref.current?.closest(".scroll") as HTMLElement | null;
    if (!sc || start === 0) return;
    const f = () => {
      if (sc.scrollTop < 400 && !anchor.current) more();
    };
    sc.addEventListener("scroll", f, { passive: true });
    return () => sc.removeEventListener("scroll", f);
  }, [start]);
  useLayoutEffect(() => {
    // Keep what the person was looking at in place when earlier items appear above it.
    const sc = ref.current?.closest(".scroll") as HTMLElement | null;
    if (sc && anchor.current) sc.scrollTop = anchor.current.top + (sc.scrollHeight - anchor.current.h);
    anchor.current = null;
  }, [limit]);
  const shown = start > 0 ? items.slice(start) : items;
  return (
    <div class="conv" role="log" aria-live="polite" aria-label="Conversation" ref={ref}>
      {start > 0 ? (
        <button type="button" class="earlier" onClick={more}>
          Show earlier messages ({start})
        </button>
      ) : (
        store.hasEarlier && (
          <button type="button" class="earlier" disabled={loading} onClick={() => { setLoading(true); store.loadEarlier().finally(() => setLoading(false)); }}>
            {loading ? "Loading…" : "Show earlier messages"}
          </button>
        )
      )}
      {shown.map((it) => (
        <ItemView key={it.key} it={it} store={store} receipt={it.kind === "user" ? receipts[it.message_id] : undefined} />
      ))}
      {chat.draft && (
        <div class="msg agent draft" aria-label="Provisional text: as the agent's screen shows it, replaced by its final words">
          <div class="draft-text">{chat.draft}</div>
          <div class="meta">drawing… (provisional)</div>
        </div>
      )}
      {chat.turnActive && !chat.starting && <Working key={chat.turnSince ?? "turn"} since={chat.turnSince} stopping={chat.stopping} waiting={openCardKind(items)} />}
      {queued.length > 0 && (
        <div class="queued" aria-label="Queued messages">
          {queued.map((it) => (
            <ItemView key={it.key} it={it} store={store} receipt={it.kind === "user" ? receipts[it.message_id] : undefined} withdrawable />
          ))}
        </div>
      )}
    </div>
  );
}
