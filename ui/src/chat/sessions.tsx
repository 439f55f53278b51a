// The agents' own sessions (GET /api/sessions: what `parley sessions` prints):
// the ones people started in a terminal, per machine, newest first, with a
// button that makes one a parley thread (the socket's resume_session):
// Continue (not running), Adopt (running in a tmux pane: parley drives that
// pane) or Watch (running in a plain terminal: followed read-only).
// Read when opened and again every few seconds while open.

import { useEffect, useState } from "preact/hooks";
import { ago, nav } from "../app";
import type { Thread } from "../protocol";
import type { Store } from "../store";

const every = 10000;

export type AgentSession = {
  id: string;
  agent: string;
  cwd: string;
  title: string;
  updated_at: string;
  turns: number;
  running: boolean;
  where: string;
  pid?: number;
  node: string;
};

type MachineListing = { node: string; listed_at: string; stale?: boolean; error?: string };

// runningWhere says where a running session runs, in words.
function runningWhere(s: AgentSession): string {
  if (!s.running) return "";
  if (s.where.startsWith("tmux:")) return "running in tmux " + s.where.slice(5);
  if (s.where.startsWith("pid:")) return "running in a terminal, pid " + s.where.slice(4);
  return "running";
}

export function Sessions({ store }: { store: Store }) {
  const [open, setOpen] = useState(false);
  const [list, setList] = useState<AgentSession[] | null>(null);
  const [machines, setMachines] = useState<MachineListing[]>([]);
  const [err, setErr] = useState("");
  useEffect(() => {
    if (!open) return;
    let live = true;
    const load = () =>
      store.getJSON<{ sessions: AgentSession[]; machines?: MachineListing[] }>("/api/sessions").then(
        (j) => {
          if (!live) return;
          setList(j.sessions ?? []);
          setMachines(j.machines ?? []);
          setErr("");
        },
        (e) => live && setErr(String((e as Error).message ?? e)),
      );
    void load();
    const t = setInterval(load, every);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [open]);
  const here = store.state.node ?? "";
  // Per machine: this one first, then the others by name.
  const groups = new Map<string, AgentSession[]>();
  for (const s of list ?? []) groups.set(s.node, [...(groups.get(s.node) ?? []), s]);
  const names = [...groups.keys()].sort((a, b) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b)));
  const cont = (s: AgentSession, watch: boolean) => {
    const t: Thread & { watch?: boolean } = { id: "", agent: s.agent, cwd: s.cwd, session_id: s.id, title: s.title, state: "", node: s.node || undefined, ...(watch ? { watch } : {}) };
    nav.thread(store, t);
  };
  return (
    <details class="sessions" open={open} onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>Sessions</summary>
      <p class="hint">Agent sessions started outside parley (a terminal, an editor), newest first.</p>
      {err && <p role="alert" class="hint">{err}</p>}
      {machines.filter((m) => m.stale).map((m) => (
        <p key={m.node} class="hint" data-stale={m.node}>
          {m.node} is away: its sessions as listed {m.listed_at && !m.listed_at.startsWith("0001") ? ago(m.listed_at) : "never"}
        </p>
      ))}
      {list && list.length === 0 && <p class="hint">No agent sessions inside this parley's folders.</p>}
      {names.map((n) => (
        <div key={n} data-machine-sessions={n}>
          {(names.length > 1 || n !== "") && <h4>{n === "" ? (here ? `${here} (this machine)` : "This machine") : n}</h4>}
          <ul class="device-list session-list" aria-label={`Sessions on ${n || "this machine"}`}>
            {groups.get(n)!.map((s) => (
              <li key={s.node + "/" + s.agent + "/" + s.id} data-session={s.id} data-running={String(s.running)}>
                <span class="name">
                  <span class={`dot ${s.running ? "st-working" : "st-idle"}`} aria-hidden="true" /> {s.title || s.id}
                </span>
                <span class="hint">
                  {s.agent} · {s.cwd} · {ago(s.updated_at)} · {s.turns} turn{s.turns === 1 ? "" : "s"}
                  {s.running && <> · <span data-where="">{runningWhere(s)}</span></>}
                </span>
                <SessionAction s={s} go={cont} />
              </li>
            ))}
          </ul>
        </div>
      ))}
    </details>
  );
}

// SessionAction is a session's one button: what parley can do with it now.
function SessionAction({ s, go }: { s: AgentSession; go: (s: AgentSession, watch: boolean) => void }) {
  if (s.running && s.agent !== "claude") {
    // Only Claude Code's running sessions can be adopted or watched; a second
    // process on a running session would fork it.
    return <span class="hint" title="parley can take only Claude Code's running sessions; continue it once it ends">running</span>;
  }
  if (s.running && s.where.startsWith("tmux:")) {
    return (
      <button type="button" class="link continue adopt" title="Take over its tmux pane: parley types into that pane, and never closes it" onClick={() => go(s, false)}>
        Adopt
      </button>
    );
  }
  if (s.running) {
    return (
      <button type="button" class="link continue watch" title="Follow it here, read-only, while it runs in its terminal" onClick={() => go(s, true)}>
        Watch
      </button>
    );
  }
  return (
    <button type="button" class="link continue" title="Continue this session here, as a parley thread" onClick={() => go(s, false)}>
      Continue
    </button>
  );
}
