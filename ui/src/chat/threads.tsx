// Finding and managing threads: the search box and its hits, the archived
// list, and the chat's rename / archive / delete (both layouts).

import { awayMachine } from "./away";
import { useEffect, useRef, useState } from "preact/hooks";
import type { ComponentChildren } from "preact";
import type { SearchHit, Thread } from "../protocol";
import type { Store } from "../store";
import { threadLabel } from "../store";
import { nav } from "../app";
import { AuditList } from "./audit";

// MAX_TITLE is the server's limit (router.MaxTitleLen).
const MAX_TITLE = 120;

// DELETE_NOTE says what a delete does, before it is done (router.DeletedNote).
export const DELETE_NOTE =
  "Deleting removes this thread's messages, cards and search entries from parley. The agent's own session " +
  "(for Claude Code, its session file under ~/.claude/projects) is left on disk: parley never deletes the agent's files. " +
  "Files attached to its messages stay in the working folder's .parley-uploads. " +
  "A running turn is stopped first, and every screen showing the thread closes.";

export function SearchBox({ store }: { store: Store }) {
  return (
    <input type="search" class="search" aria-label="Search threads" placeholder="Search threads and messages" value={store.state.search.q}
      onInput={(e) => store.search((e.target as HTMLInputElement).value)} />
  );
}

const kindLabel: Record<SearchHit["kind"], string> = { title: "title", user: "your message", agent: "answer" };

// searchTerms are the words of a query to highlight: its words and phrases'
// words, without FTS operators and quotes.
export function searchTerms(q: string): string[] {
  const words = q.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
  return [...new Set(words.filter((w) => !["and", "or", "not", "near"].includes(w)))].sort((a, b) => b.length - a.length);
}

// Highlight marks each term where it starts a word in text (the search
// matches words and their beginnings).
export function Highlight({ text, terms }: { text: string; terms: string[] }) {
  if (!terms.length) return <>{text}</>;
  const esc = terms.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const re = new RegExp(`(?<![\\p{L}\\p{N}_])(${esc.join("|")})`, "giu");
  const out: ComponentChildren[] = [];
  let at = 0;
  for (const m of text.matchAll(re)) {
    out.push(text.slice(at, m.index), <mark key={m.index}>{m[0]}</mark>);
    at = m.index! + m[0].length;
  }
  out.push(text.slice(at));
  return <>{out}</>;
}

// byThread groups hits under their thread, in the order the search ranked
// the thread's first hit.
export function byThread(hits: SearchHit[]): { thread: string; title: string; archived?: boolean; hits: SearchHit[] }[] {
  const groups = new Map<string, { thread: string; title: string; archived?: boolean; hits: SearchHit[] }>();
  for (const h of hits) {
    let g = groups.get(h.thread);
    if (!g) groups.set(h.thread, (g = { thread: h.thread, title: h.title, archived: h.archived, hits: [] }));
    g.hits.push(h);
  }
  return [...groups.values()];
}

// SearchHits shows what the search found instead of the thread list: one row
// per thread, its hits under it with the words found marked; the row opens
// the thread, a hit opens it at the message.
export function SearchHits({ store, itemClass }: { store: Store; itemClass: string }) {
  const s = store.state.search;
  if (s.error) return <p class="hint search-error" role="alert" data-search-error="">{s.error}</p>;
  // A hub's search that did not cover every machine says which, with or without hits.
  const unsearched = s.unsearched.length > 0 && (
    <p class="hint pad unsearched" role="status" data-unsearched="">
      not searched: {s.unsearched.map((u) => `${u.node} (${u.reason})`).join(", ")}
    </p>
  );
  if (!s.busy && s.hits.length === 0) return <>{unsearched}<p class="hint pad" data-search-empty="">Nothing found for “{s.q.trim()}”.</p></>;
  const open = (thread: string, h?: SearchHit) => {
    store.wantHit(h ?? { thread, seq: 0, kind: "title", snippet: "", title: "" });
    const t = store.state.threads.find((x) => x.id === thread) ?? store.state.archived?.find((x) => x.id === thread);
    if (t) nav.thread(store, t);
    else location.hash = "#/t/" + encodeURIComponent(thread);
  };
  const terms = searchTerms(s.q);
  return (
    <>
    {unsearched}
    <ul class="hits" aria-label="Search results">
      {byThread(s.hits).map((g) => (
        <li key={g.thread} class="hit-group" data-hit-group={g.thread}>
          <button type="button" class={itemClass + " hit-thread"} data-hit-thread={g.thread} onClick={() => open(g.thread)}
            aria-label={`${g.title || g.thread}: ${g.hits.length} match${g.hits.length === 1 ? "" : "es"}`}>
            <span class="t-title"><Highlight text={g.title || g.thread} terms={terms} />{g.archived && <span class="hint"> · archived</span>}</span>
            <span class="t-meta">{g.hits.length} match{g.hits.length === 1 ? "" : "es"}</span>
          </button>
          <ul class="hit-list">
            {g.hits.filter((h) => h.kind !== "title").map((h) => (
              <li key={h.seq}>
                <button type="button" class="hit" data-hit-thread={h.thread} data-hit-seq={h.seq} onClick={() => open(h.thread, h)}>
                  <span class="hint">{kindLabel[h.kind] ?? h.kind}: </span><Highlight text={h.snippet} terms={terms} />
                </button>
              </li>
            ))}
          </ul>
        </li>
      ))}
    </ul>
    </>
  );
}

// ArchivedToggle shows or hides the archived threads under the list.
export function ArchivedToggle({ store, itemClass }: { store: Store; itemClass: string }) {
  const a = store.state.archived;
  return (
    <div class="archived">
      <button type="button" class="linkish" aria-expanded={a !== null} data-show-archived="" onClick={() => store.showArchived(a === null)}>
        {a === null ? "Show archived threads" : "Hide archived threads"}
      </button>
      {a !== null && (
        <ul class="threads" aria-label="Archived threads">
          {a.map((t) => (
            <li key={t.id}>
              <button type="button" class={itemClass} data-archived-thread={t.id} onClick={() => nav.thread(store, t)}>
                <span class="t-title">{threadLabel(t)}</span>
                <span class="t-meta">{t.agent} · {t.cwd}</span>
              </button>
            </li>
          ))}
          {a.length === 0 && <li class="hint">No archived threads.</li>}
        </ul>
      )}
    </div>
  );
}

// handsBack says whether the thread's agent can be handed back to a terminal:
// the stream and ACP agents (a tmux agent is in a terminal already).
function handsBack(store: Store, thread: Thread): boolean {
  const a = store.state.agents.find((x) => x.id === thread.agent && (!thread.node || x.node === thread.node));
  return a?.transport === "stream" || a?.transport === "acp";
}

// ThreadActions renames, archives or deletes the chat's thread; a delete is
// confirmed in place, saying what happens to the agent's own session.
export function ThreadActions({ store, thread }: { store: Store; thread: Thread }) {
  const [mode, setMode] = useState<"" | "rename" | "delete" | "activity">("");
  const [removeTree, setRemoveTree] = useState(false); // delete: its own worktree too
  const [dirty, setDirty] = useState(false); // delete: the worktree has uncommitted changes, asked again
  const [title, setTitle] = useState("");
  const [err, setErr] = useState("");
  const [busy, setBusy] = useState(false);
  useEffect(() => { setMode(""); setErr(""); }, [thread.id]);
  // Rename puts the cursor in the title, its text selected to type over.
  const titleBox = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (mode !== "rename" || !titleBox.current) return;
    titleBox.current.focus();
    titleBox.current.select();
  }, [mode]);
  const act = async (f: () => Promise<void>) => {
    setBusy(true);
    setErr("");
    try {
      await f();
      setMode("");
    } catch (e) {
      setErr((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="thread-actions">
      <div class="row">
        <button type="button" class="small" data-action="rename" onClick={() => { setTitle(thread.title); setErr(""); setMode(mode === "rename" ? "" : "rename"); }}>Rename</button>
        <button type="button" class="small" data-action="archive" disabled={busy} onClick={() => act(() => store.archiveThread(thread.id, !thread.archived))}>
          {thread.archived ? "Unarchive" : "Archive"}
        </button>
        {handsBack(store, thread) && (
          <button type="button" class="small" data-action="hand-back" disabled={thread.state === "handed_back"}
            title="End parley's agent after the turn and show the command that resumes the session in a terminal" onClick={() => { setErr(""); if (!store.handBack()) setErr("Not connected: try again once online."); }}>
            Continue in a terminal
          </button>
        )}
        <button type="button" class="small" data-action="activity" aria-expanded={mode === "activity"}
          title="Who did what in this thread, from where (its audit trail)" onClick={() => { setErr(""); setMode(mode === "activity" ? "" : "activity"); }}>Activity</button>
        <button type="button" class="small danger" data-action="delete" onClick={() => { setErr(""); setMode(mode === "delete" ? "" : "delete"); }}>Delete</button>
      </div>
      {mode === "activity" && <AuditList thread={thread.id} label="Thread activity" />}
      {thread.archived && <div class="hint" data-archived-note="">Archived: hidden from the list. Sending a message brings it back.</div>}
      {mode === "rename" && (
        <form class="rename" onSubmit={(e) => { e.preventDefault(); void act(() => store.renameThread(thread.id, title)); }}>
          <input type="text" ref={titleBox} aria-label="Thread title" maxLength={MAX_TITLE} value={title} onInput={(e) => setTitle((e.target as HTMLInputElement).value)} />
          <button type="submit" class="primary small" disabled={busy}>Save</button>
          <button type="button" class="small" onClick={() => setMode("")}>Cancel</button>
        </form>
      )}
      {mode === "delete" && (
        <div class="confirm" role="alertdialog" aria-label="Delete this thread?" data-confirm-delete="">
          <p>{DELETE_NOTE}</p>
          {thread.worktree && (
            <label class="check">
              <input type="checkbox" data-remove-worktree="" checked={removeTree} onChange={(e) => { setRemoveTree((e.target as HTMLInputElement).checked); setDirty(false); }} />
              Also remove its worktree ({thread.worktree})
            </label>
          )}
          {dirty && <p class="hint error" data-worktree-dirty="">Its worktree has uncommitted changes: they would be lost. Delete anyway?</p>}
          <div class="row">
            <button type="button" class="danger" data-confirm="delete" disabled={busy} onClick={() => act(async () => {
              try {
                await store.deleteThread(thread.id, removeTree, dirty);
              } catch (e) {
                // Keep the dialog open (act closes it only on success): it now asks again.
                if ((e as { code?: string }).code === "worktree_dirty") { setDirty(true); throw new Error(""); }
                throw e;
              }
              nav.home();
            })}>{dirty ? "Delete with its changes" : "Delete thread"}</button>
            <button type="button" onClick={() => setMode("")}>Cancel</button>
          </div>
        </div>
      )}
      {err && <div class="hint error" role="alert" data-action-error="">{err}</div>}
    </div>
  );
}

// MAX_CONTEXT is the server's limit (router.MaxMoveContext).
const MAX_CONTEXT = 20;

// agentGone: the thread's agent is no longer configured (or this build cannot
// run it): nothing will answer there until the thread moves.
export function agentGone(store: Store, t: Thread): boolean {
  if (t.state === "no_agent") return true;
  if (!store.state.agentsLoaded || machineGone(store, t)) return false;
  return !store.state.agents.some((a) => a.id === t.agent && a.status !== "unavailable" && (!t.node || a.node === t.node));
}

// machineGone: at a cluster's hub, the thread's machine lists no agent at all:
// it is not joined to the hub (revoked, or it never joined; an offline
// machine keeps its agents listed). Its agent is not what is missing.
export function machineGone(store: Store, t: Thread): boolean {
  if (!t.node || !store.state.node || t.node === store.state.node || !store.state.agentsLoaded) return false;
  return !store.state.agents.some((a) => a.node === t.node);
}

// MachineGone says, on a thread whose machine is not joined to the hub, which
// machine and how to join it again (docs/multi-machine.md).
function MachineGone({ node }: { node: string }) {
  return (
    <div class="banner move" role="region" aria-label="Machine not joined" data-machine-gone="">
      <p>Machine “{node}” is not joined to this hub: it was revoked, or never joined. Nothing reaches this thread from here; messages sent to it fail.</p>
      <p class="hint">To join it again, run <code>parley join-token --name {node}</code> on the hub, then <code>parley join &lt;token&gt;</code> on {node} and restart its <code>parley serve</code>.</p>
    </div>
  );
}

// MoveThread offers, on a thread whose agent is gone, to move it to another
// agent of its machine, saying what the new agent will know.
export function MoveThread({ store, thread }: { store: Store; thread: Thread }) {
  const targets = store.state.agents.filter((a) => a.status === "ready" && a.id !== thread.agent && (thread.node ? a.node === thread.node : !a.node || a.node === store.state.node));
  const [agent, setAgent] = useState("");
  const [give, setGive] = useState(true);
  const [count, setCount] = useState(10);
  const [err, setErr] = useState("");
  const [busy, setBusy] = useState(false);
  useEffect(() => { setErr(""); setAgent(""); }, [thread.id]);
  if (machineGone(store, thread)) return <MachineGone node={thread.node!} />;
  if (!agentGone(store, thread)) return null;
  const to = agent || targets[0]?.id || "";
  const move = async () => {
    setBusy(true);
    setErr("");
    try {
      await store.moveThread(thread.id, to, give ? count : 0);
    } catch (e) {
      setErr((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="banner move" role="region" aria-label="Move this thread" data-move-thread="">
      <p>The agent “{thread.agent}” is no longer configured: nothing answers in this thread.{targets.length ? " Move it to another agent; its messages stay here." : " Configure an agent to move it to."}</p>
      {targets.length > 0 && (
        <form class="row wrap" onSubmit={(e) => { e.preventDefault(); void move(); }}>
          <select aria-label="Agent to move to" value={to} onChange={(e) => setAgent((e.target as HTMLSelectElement).value)}>
            {targets.map((a) => <option key={a.id} value={a.id}>{a.name || a.id}</option>)}
          </select>
          <label class="check">
            <input type="checkbox" checked={give} onChange={(e) => setGive((e.target as HTMLInputElement).checked)} data-move-context="" />
            give it the last
            <input type="number" min={1} max={MAX_CONTEXT} value={count} disabled={!give} aria-label="Messages to give as context"
              onInput={(e) => setCount(Math.min(MAX_CONTEXT, Math.max(1, Number((e.target as HTMLInputElement).value) || 1)))} />
            messages as context
          </label>
          <button type="submit" class="primary small" disabled={busy || !to} data-move="">Move</button>
        </form>
      )}
      <p class="hint">The new agent starts a fresh session in the same folder ({thread.cwd}): it does not have the old agent’s memory of this conversation{give ? "; the messages you give go with your next message" : ""}.</p>
      {err && <div class="hint error" role="alert" data-move-error="">{err}</div>}
    </div>
  );
}

// Gone says why the chat shows no thread any more.
export function Gone({ store }: { store: Store }) {
  const g = store.state.chat.gone;
  if (!g) return null;
  return <div class="banner" role="status" data-gone="">{g}</div>;
}

// FromCopy says, at a hub, that the thread's machine is away and what is shown
// is the hub's copy of its recent events; not once the machine's agents are
// listed online again (its own events follow on the socket).
export function FromCopy({ store }: { store: Store }) {
  const c = store.state.chat;
  const node = c.thread?.node;
  const back = !!node && store.state.agents.some((a) => a.node === node && a.status !== "offline");
  if (c.fromCopy === undefined || back || awayMachine(store, node)) return null; // Away says it
  const since = c.fromCopy ? new Date(c.fromCopy) : null;
  const when = since && !isNaN(since.getTime()) ? ` since ${since.toLocaleString()}` : "";
  return (
    <div class="banner" role="status" data-from-copy="">
      Machine {c.thread?.node || "of this thread"} offline{when}; showing the hub's copy of its recent events.
    </div>
  );
}

// useFocus shows the message a search hit opened the thread at.
// Once per hit: later messages do not pull the view back to it.
export function useFocus(store: Store, hold: () => void) {
  const id = store.state.chat.focus;
  const done = useRef("");
  useEffect(() => {
    if (!id || done.current === id) return;
    const el = document.querySelector(`[data-message="${CSS.escape(id)}"]`);
    if (!el) return;
    done.current = id;
    hold();
    el.scrollIntoView({ block: "center" });
    el.classList.add("found");
  }, [id, store.state.chat.items.length]);
}
