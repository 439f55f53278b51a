// Starting a thread: an agent, a working directory inside the agent's roots (with
// completion from the server), a first message; or resuming a native session.

import { useEffect, useState } from "preact/hooks";
import type { AgentInfo } from "../protocol";
import type { Store } from "../store";
import { NoAgents } from "./noagents";

type Session = { id: string; title: string; when?: string };

function asSessions(v: unknown): Session[] {
  const list = Array.isArray(v) ? v : ((v as { sessions?: unknown[] })?.sessions ?? []);
  return list.map((s) => {
    const o = s as Record<string, string>;
    return { id: o.session_id ?? o.id, title: o.title ?? o.summary ?? o.first_prompt ?? o.session_id ?? o.id, when: o.updated_at ?? o.modified ?? o.last_active };
  }).filter((s) => s.id);
}

export function NewThread({ store, agents, defaultAgent, onStart, onResume }: {
  store: Store;
  agents: AgentInfo[];
  defaultAgent: string;
  onStart: (agent: string, cwd: string, text: string) => void;
  onResume: (agent: string, sessionID: string, cwd: string) => void;
}) {
  const [agent, setAgent] = useState(defaultAgent || agents[0]?.id || "");
  const a = agents.find((x) => x.id === agent);
  const [cwd, setCwd] = useState(a?.roots?.[0] ?? "");
  const [text, setText] = useState("");
  const [dirs, setDirs] = useState<string[]>([]);
  const [sessions, setSessions] = useState<Session[] | null>(null);

  // Defaults fill only what is still empty when they arrive: an effect runs after
  // the render, so a choice made in between must not be overwritten.
  useEffect(() => {
    if (defaultAgent || agents[0]) setAgent((cur) => cur || defaultAgent || agents[0].id);
  }, [agents, defaultAgent]);
  useEffect(() => {
    const root = a?.roots?.[0];
    if (root) setCwd((cur) => cur || root);
  }, [a]);
  useEffect(() => {
    if (!cwd) return;
    let live = true;
    const t = setTimeout(() => {
      store.getJSON<unknown>(`/api/fs/complete?path=${encodeURIComponent(cwd)}`).then(
        (v) => live && setDirs((Array.isArray(v) ? v : ((v as { entries?: string[]; dirs?: string[] }).entries ?? (v as { dirs?: string[] }).dirs ?? [])) as string[]),
        () => live && setDirs([]),
      );
    }, 150);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [cwd]);

  const loadSessions = () => {
    store.getJSON<unknown>(`/api/agents/${encodeURIComponent(agent)}/sessions?cwd=${encodeURIComponent(cwd)}`).then((v) => setSessions(asSessions(v)), () => setSessions([]));
  };

  return (
    <form
      class="newthread"
      aria-label="New thread"
      onSubmit={(e) => {
        e.preventDefault();
        if (agent && cwd && text.trim()) onStart(agent, cwd, text.trim());
      }}
    >
      <h2>New thread</h2>
      {store.state.agentsLoaded && agents.length === 0 && <NoAgents />}
      <label>
        Agent
        <select value={agent} onChange={(e) => { setAgent((e.target as HTMLSelectElement).value); setSessions(null); }}>
          {agents.map((x) => (
            <option key={x.id} value={x.id}>
              {x.name || x.id} ({x.transport})
            </option>
          ))}
        </select>
      </label>
      <label>
        Working directory
        <input type="text" list="dir-complete" value={cwd} spellcheck={false} autocomplete="off" onInput={(e) => setCwd((e.target as HTMLInputElement).value)} />
        <datalist id="dir-complete">
          {dirs.map((d) => (
            <option key={d} value={d} />
          ))}
        </datalist>
      </label>
      {a?.roots?.length ? <div class="hint">Allowed: {a.roots.join(", ")}</div> : null}
      <label>
        First message
        <textarea rows={3} value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} />
      </label>
      <div class="row">
        <button type="submit" class="primary" disabled={!agent || !cwd || !text.trim()} title={startBlocked(agents.length, agent, cwd, text)}>
          Start
        </button>
        <button type="button" onClick={loadSessions} disabled={!agent || !cwd}>
          Resume a session…
        </button>
      </div>
      {sessions && (
        <ul class="sessions" aria-label="Native sessions">
          {sessions.length === 0 && <li class="hint">No sessions in this directory.</li>}
          {sessions.map((s) => (
            <li key={s.id}>
              <button type="button" class="link" onClick={() => onResume(agent, s.id, cwd)}>
                {s.title}
              </button>
              {s.when && <span class="hint"> {new Date(s.when).toLocaleString()}</span>}
            </li>
          ))}
        </ul>
      )}
    </form>
  );
}

// startBlocked says why Start is disabled ("" when it is not).
function startBlocked(nAgents: number, agent: string, cwd: string, text: string): string {
  if (nAgents === 0) return "No agent: see above";
  if (!agent) return "Choose an agent";
  if (!cwd) return "Give a working directory";
  if (!text.trim()) return "Write the first message";
  return "";
}
