// Schedules: this machine's schedules (GET /api/schedules) with their next
// and last run and the thread the last run went to; add, pause, resume,
// delete. At a cluster's hub every machine's, each with its node, and a
// new one may be kept and run on another machine (its "machine").
// Shown beside Devices, desktop and phone alike.

import { useEffect, useState } from "preact/hooks";
import type { AgentInfo } from "../protocol";
import { api, sendAdd, useAddId } from "./api";

type Schedule = {
  id: string;
  name?: string;
  agent: string;
  cwd: string;
  thread?: string;
  new?: boolean;
  kind: "cron" | "every" | "at";
  expr: string;
  tz: string;
  missed: string;
  text: string;
  paused: boolean;
  next_run?: string;
  last_run?: string;
  last_thread?: string;
  last_error?: string;
  node?: string;
};

type Unlisted = { node: string; reason: string };

function when(ts?: string): string {
  if (!ts) return "–";
  const d = new Date(ts);
  return isFinite(d.getTime()) ? d.toLocaleString() : "–";
}

type Draft = { machine: string; agent: string; cwd: string; kind: "cron" | "every" | "at"; expr: string; text: string; name: string; fresh: boolean; tz: string };

export function Schedules({ agents: all, here }: { agents: AgentInfo[]; here: string }) {
  const [open, setOpen] = useState(false);
  const [list, setList] = useState<Schedule[]>([]);
  const [unlisted, setUnlisted] = useState<Unlisted[]>([]);
  const [err, setErr] = useState("");
  const [draft, setDraft] = useState<Draft>({ machine: "", agent: "", cwd: "", kind: "cron", expr: "", text: "", name: "", fresh: false, tz: "" });
  // One id per add the person makes: the same form sent again keeps it.
  const addId = useAddId("sch");
  // The machines, this one first; none on a single machine (agents name no node).
  const machines = [...new Set([here, ...all.map((a) => a.node ?? "")].filter(Boolean))];
  const machine = draft.machine || here;
  const agents = all.filter((a) => !a.node || a.node === machine).map((a) => a.id);
  const load = () =>
    api<{ schedules: Schedule[]; unlisted?: Unlisted[] }>("GET", "/api/schedules").then(
      (j) => {
        setList(j.schedules);
        setUnlisted(j.unlisted ?? []);
      },
      (e) => setErr(String(e.message ?? e)),
    );
  useEffect(() => {
    if (open) void load();
  }, [open]);
  const act = async (f: () => Promise<unknown>) => {
    setErr("");
    try {
      await f();
    } catch (e) {
      setErr(String((e as Error).message));
    }
    void load();
  };
  const add = (e: Event) => {
    e.preventDefault();
    const d = draft;
    const body: Record<string, unknown> = { agent: d.agent || agents[0], cwd: d.cwd, text: d.text, [d.kind]: d.kind === "at" ? new Date(d.expr).toISOString() : d.expr };
    if (d.name) body.name = d.name;
    if (d.tz) body.tz = d.tz;
    if (d.fresh) body.new = true;
    if (machine && machine !== here) body.machine = machine;
    const id = addId.idFor(body);
    void act(async () => {
      await sendAdd("/api/schedules", { ...body, id }, "schedule");
      addId.done();
      setDraft({ ...d, expr: "", text: "", name: "" });
    });
  };
  const set = (k: keyof Draft) => (e: Event) => {
    const t = e.target as HTMLInputElement;
    setDraft({ ...draft, [k]: t.type === "checkbox" ? t.checked : t.value });
  };
  return (
    <details class="schedules" onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>Schedules</summary>
      {err && <p role="alert" class="hint error">{err}</p>}
      {unlisted.map((u) => (
        <p key={u.node} class="hint error unlisted">Machine {u.node}: its schedules are not listed ({u.reason})</p>
      ))}
      <ul class="schedule-list">
        {list.map((s) => (
          <li key={s.id} data-schedule={s.id}>
            <span class="name">{s.name || s.text.split("\n")[0].slice(0, 60)}</span>
            <span class="hint">
              {s.kind} {s.expr} {s.kind === "cron" ? `(${s.tz})` : ""} · {s.agent}{s.node && machines.length > 1 ? ` on ${s.node}` : ""} · next {s.paused ? "paused" : when(s.next_run)} · last {when(s.last_run)}
              {s.last_thread && (
                <>
                  {" · "}
                  <a href={`#/t/${encodeURIComponent(s.last_thread)}`} class="last-thread">its thread</a>
                </>
              )}
              {s.last_error && <span class="error"> · failed: {s.last_error}</span>}
            </span>
            <span>
              {s.paused ? (
                <button type="button" class="link resume" onClick={() => act(() => api("POST", `/api/schedules/${encodeURIComponent(s.id)}/resume`))}>Resume</button>
              ) : (
                <button type="button" class="link pause" onClick={() => act(() => api("POST", `/api/schedules/${encodeURIComponent(s.id)}/pause`))}>Pause</button>
              )}{" "}
              <button
                type="button"
                class="link delete"
                onClick={() => confirm("Delete this schedule? Its runs stay in their threads.") && act(() => api("DELETE", `/api/schedules/${encodeURIComponent(s.id)}`))}
              >
                Delete
              </button>
            </span>
          </li>
        ))}
        {open && !list.length && <li class="hint">{machines.length > 1 ? "No schedules on any machine." : "No schedules on this machine."}</li>}
      </ul>
      <form class="schedule-add" onSubmit={add}>
        {machines.length > 1 && (
          <select aria-label="Machine" value={machine} onChange={(e) => setDraft({ ...draft, machine: (e.target as HTMLSelectElement).value, agent: "", cwd: "" })}>
            {machines.map((m) => (
              <option key={m} value={m}>{m}</option>
            ))}
          </select>
        )}
        <select aria-label="Agent" value={draft.agent || agents[0]} onChange={set("agent")}>
          {agents.map((a) => (
            <option key={a} value={a}>{a}</option>
          ))}
        </select>
        <input aria-label="Working directory" placeholder="/path/to/project" required value={draft.cwd} onInput={set("cwd")} />
        <select aria-label="When" value={draft.kind} onChange={set("kind")}>
          <option value="cron">cron</option>
          <option value="every">every</option>
          <option value="at">once at</option>
        </select>
        {draft.kind === "at" ? (
          <input aria-label="Schedule" required type="datetime-local" value={draft.expr} onInput={set("expr")} />
        ) : (
          <input aria-label="Schedule" required placeholder={draft.kind === "cron" ? "0 9 * * 1-5" : "2h"} value={draft.expr} onInput={set("expr")} />
        )}
        {draft.kind === "cron" && <input aria-label="Time zone" placeholder="time zone (default the machine's)" value={draft.tz} onInput={set("tz")} />}
        <input aria-label="Name" placeholder="name (optional)" value={draft.name} onInput={set("name")} />
        <textarea aria-label="Text" placeholder="What the agent is to do" required value={draft.text} onInput={set("text")} />
        <label class="hint">
          <input type="checkbox" checked={draft.fresh} onChange={set("fresh")} /> a new thread each run
        </label>
        <button type="submit">Add schedule</button>
      </form>
    </details>
  );
}
