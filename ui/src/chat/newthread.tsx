// Starting a thread: at a cluster's hub a machine first, then an agent, a working
// directory inside the agent's roots (with completion from the server for this
// machine's own folders), a first message; or resuming a native session.

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

// The folder a thread last started in, per machine and agent, kept in this
// browser: the form offers it again for that agent on that machine.
const FOLDERS = "parley.lastFolders";

function lastFolders(): Record<string, string> {
  try {
    return JSON.parse(localStorage.getItem(FOLDERS) ?? "{}") ?? {};
  } catch {
    return {};
  }
}

export function lastFolder(machine: string, agent: string): string | undefined {
  return lastFolders()[machine + "/" + agent];
}

function rememberFolder(machine: string, agent: string, cwd: string) {
  const f = lastFolders();
  f[machine + "/" + agent] = cwd;
  try {
    localStorage.setItem(FOLDERS, JSON.stringify(f));
  } catch {
    /* storage full or disabled: the form offers the agent's root next time */
  }
}

export function NewThread({ store, agents, defaultAgent, onStart, onResume }: {
  store: Store;
  agents: AgentInfo[];
  defaultAgent: string;
  onStart: (agent: string, cwd: string, text: string, node?: string) => void;
  onResume: (agent: string, sessionID: string, cwd: string) => void;
}) {
  const here = store.state.node;
  // The machines, this one first; none on a single machine (agents name no node).
  const machines = [...new Set([here, ...agents.map((x) => x.node ?? "")].filter(Boolean))];
  const [machine, setMachine] = useState(here || machines[0] || "");
  const onMachine = agents.filter((x) => (x.node ?? "") === (machines.length ? machine : ""));
  const offline = onMachine.length > 0 && onMachine.every((x) => x.status === "offline");
  // Another machine's folders are not this one's: no completion, no resume.
  const remote = machines.length > 0 && machine !== here;
  const [agent, setAgent] = useState(defaultAgent || agents[0]?.id || "");
  const a = onMachine.find((x) => x.id === agent);
  const mkey = machines.length ? machine : "";
  const [cwd, setCwd] = useState(lastFolder(mkey, agent) ?? a?.roots?.[0] ?? "");
  const [text, setText] = useState("");
  const [dirs, setDirs] = useState<string[]>([]);
  const [sessions, setSessions] = useState<Session[] | null>(null);

  // The agents as they are now: at a hub a machine may have gone away since
  // the list was read (its agents then say offline).
  useEffect(() => {
    void store.refresh();
  }, []);
  // Defaults fill only what is still empty when they arrive: an effect runs after
  // the render, so a choice made in between must not be overwritten.
  useEffect(() => {
    if (defaultAgent || agents[0]) setAgent((cur) => cur || defaultAgent || agents[0].id);
    if (machines.length) setMachine((cur) => cur || here || machines[0]);
  }, [agents, defaultAgent, here]);
  const pickMachine = (m: string) => {
    setMachine(m);
    setSessions(null);
    const there = agents.filter((x) => x.node === m);
    const next = there.find((x) => x.id === agent) ?? there.find((x) => x.id === defaultAgent) ?? there[0];
    setAgent(next?.id ?? "");
    setCwd((next && lastFolder(m, next.id)) ?? next?.roots?.[0] ?? "");
  };
  const pickAgent = (id: string) => {
    setAgent(id);
    setSessions(null);
    const last = lastFolder(mkey, id);
    if (last) setCwd(last);
  };
  useEffect(() => {
    const root = (a && lastFolder(mkey, a.id)) ?? a?.roots?.[0];
    if (root) setCwd((cur) => cur || root);
  }, [a]);
  useEffect(() => {
    if (!cwd || remote) {
      setDirs([]);
      return;
    }
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
  }, [cwd, remote]);

  const loadSessions = () => {
    store.getJSON<unknown>(`/api/agents/${encodeURIComponent(agent)}/sessions?cwd=${encodeURIComponent(cwd)}`).then((v) => setSessions(asSessions(v)), () => setSessions([]));
  };

  return (
    <form
      class="newthread"
      aria-label="New thread"
      onSubmit={(e) => {
        e.preventDefault();
        if (!a || !cwd || !text.trim() || offline) return;
        rememberFolder(mkey, agent, cwd);
        onStart(agent, cwd, text.trim(), remote ? machine : undefined);
      }}
    >
      <h2>New thread</h2>
      {store.state.agentsLoaded && agents.length === 0 && <NoAgents />}
      {machines.length > 0 && (
        <label>
          Machine
          <select name="machine" value={machine} onChange={(e) => pickMachine((e.target as HTMLSelectElement).value)}>
            {machines.map((m) => (
              <option key={m} value={m}>
                {m}
                {m === here ? " (this machine)" : agents.some((x) => x.node === m && x.status !== "offline") ? "" : " (offline)"}
              </option>
            ))}
          </select>
        </label>
      )}
      {offline && <div class="hint" role="status">Machine {machine} is offline: a new thread there waits until it is back.</div>}
      <label>
        Agent
        <select name="agent" value={agent} onChange={(e) => pickAgent((e.target as HTMLSelectElement).value)}>
          {onMachine.map((x) => (
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
        <button type="submit" class="primary" disabled={!a || !cwd || !text.trim() || offline} title={offline ? `Machine ${machine} is offline` : startBlocked(agents.length, a ? agent : "", cwd, text)}>
          Start
        </button>
        {!remote && (
          <button type="button" onClick={loadSessions} disabled={!agent || !cwd}>
            Resume a session…
          </button>
        )}
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
