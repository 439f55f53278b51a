// The machines of a cluster's hub (GET /api/nodes: what `parley nodes` prints),
// shown on the hub only and read again every few seconds while open, so a
// machine going away shows as offline without a reload.

import { useEffect, useRef, useState } from "preact/hooks";
import { ago } from "../app";
import type { NodeStatus } from "../protocol";
import type { Store } from "../store";

const every = 3000;

function when(ts?: string): string {
  const d = new Date(ts ?? "");
  return isFinite(d.getTime()) ? d.toLocaleString() : "";
}

// nodeState is "online since …", "offline since …" or "never connected".
export function nodeState(n: NodeStatus): string {
  if (!n.since) return n.online ? "online" : "never connected";
  return `${n.online ? "online" : "offline"} since ${when(n.since)}`;
}

export function Machines({ store }: { store: Store }) {
  const [open, setOpen] = useState(false);
  const [nodes, setNodes] = useState<NodeStatus[] | null>(null);
  const [hubThreads, setHubThreads] = useState(0);
  const [err, setErr] = useState("");
  // Which machines were online at the last read: a change reloads the agents
  // too, so their status (and the new-thread form's) says it as well.
  const seen = useRef("");
  useEffect(() => {
    if (!open) return;
    let live = true;
    const load = () =>
      store.getJSON<{ nodes: NodeStatus[]; hub?: { threads: number } }>("/api/nodes").then(
        (j) => {
          if (!live) return;
          setNodes(j.nodes ?? []);
          setHubThreads(j.hub?.threads ?? 0);
          setErr("");
          const now = (j.nodes ?? []).map((n) => `${n.name}:${n.online}`).join(",");
          if (now !== seen.current) {
            seen.current = now;
            void store.refresh();
          }
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
  if (!store.state.node) return null; // not a cluster's hub
  // A machine's threads: the hub's count (every thread, archived too: a
  // node's from its directory, the hub's own from its store), or the
  // threads this dashboard has on it when more (a summary not in yet, or
  // the one open on screen, must not count as none).
  const onScreen = new Map<string, string>();
  // (The lists' entries last: they name a thread's machine for sure.)
  for (const t of [...(store.state.chat.thread ? [store.state.chat.thread] : []), ...(store.state.archived ?? []), ...store.state.threads]) {
    onScreen.set(t.id, t.node || store.state.node);
  }
  const listed = (node: string) => [...onScreen.values()].filter((n) => n === node).length;
  const threads = (k: number) => `${k} thread${k === 1 ? "" : "s"}`;
  return (
    // open follows the state, so a list drawn anew (the side list after a
    // refresh) keeps the view as the person left it.
    <details class="machines" open={open} onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>Machines</summary>
      <p class="hint" data-hub-threads="">This machine: {store.state.node} (the hub) · {threads(Math.max(hubThreads, listed(store.state.node)))}</p>
      {err && <p role="alert" class="hint">{err}</p>}
      {nodes && nodes.length === 0 && <p class="hint">No other machine has joined. On this one, `parley join-token` prints the command that joins one.</p>}
      <ul class="device-list machine-list" aria-label="Machines">
        {(nodes ?? []).map((n) => (
          <li key={n.name} data-node={n.name} data-online={String(n.online)}>
            <span class="name">
              <span class={`dot ${n.online ? "st-ready" : "st-crashed"}`} aria-hidden="true" /> {n.name}
            </span>
            <span class="hint node-state">{nodeState(n)}</span>
            <span class="hint">
              {n.online ? `last seen ${n.last_seen ? ago(n.last_seen) : "never"} · ` : ""}{n.agents?.length ? n.agents.join(", ") : "no agents"} · {threads(Math.max(n.threads, listed(n.name)))} · {n.version ? "version " + n.version : "version unknown"}
            </span>
          </li>
        ))}
      </ul>
    </details>
  );
}
