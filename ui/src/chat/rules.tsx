// Approval rules: the machine's rules in the order they answer (GET
// /api/rules): the config's, read-only, then those made here or from a card,
// which can be edited and removed; a test box says which rule would answer a
// call (POST /api/rules/test). At a cluster's hub a machine selector shows
// another machine's rules (?machine=M): kept and applied there, changed from
// here. MakeRule is a permission card's "Make a rule…": a proposed rule,
// editable, saved (on the thread's machine) while the card is allowed once.
// Each add carries an id (./api's useAddId): sent again after a lost
// answer, by the form itself or the person, it is made once.

import { useEffect, useRef, useState } from "preact/hooks";
import type { Store } from "../store";
import { api, sendAdd, useAddId } from "./api";
import { proposeRule, type RuleSpec } from "../propose";

type Entry = RuleSpec & { n: number; id?: string; from: string; text: string; created_by?: string; expires_at?: string; expired?: boolean };
type Answer = { action: string; rule?: number; by?: string; reason?: string };

function until(ts?: string): string {
  if (!ts) return "";
  const d = new Date(ts);
  return isFinite(d.getTime()) ? d.toLocaleString() : "";
}

// RuleFields edits a rule: action, agent, tool, command, paths, for.
function RuleFields({ spec, onChange, idp }: { spec: RuleSpec; onChange: (s: RuleSpec) => void; idp: string }) {
  const set = (k: keyof RuleSpec) => (e: Event) => {
    const v = (e.target as HTMLInputElement).value;
    const next: RuleSpec = { ...spec, [k]: k === "paths" ? v.split(",").map((s) => s.trim()).filter(Boolean) : v };
    if (k === "paths" && !(next.paths ?? []).length) delete next.paths;
    onChange(next);
  };
  return (
    <>
      <select aria-label={`${idp} action`} value={spec.action} onChange={set("action")}>
        <option value="allow">allow</option>
        <option value="deny">deny</option>
        <option value="ask">ask</option>
      </select>
      <input aria-label={`${idp} agent`} placeholder="agent (any)" value={spec.agent ?? ""} onInput={set("agent")} />
      <input aria-label={`${idp} tool`} placeholder="tool, e.g. Bash (any)" value={spec.tool ?? ""} onInput={set("tool")} />
      <input aria-label={`${idp} command`} placeholder='command, e.g. "go test *"' value={spec.command ?? ""} onInput={set("command")} />
      <input aria-label={`${idp} paths`} placeholder="paths, comma-separated" value={(spec.paths ?? []).join(", ")} onInput={set("paths")} />
      <input aria-label={`${idp} for`} placeholder="for, e.g. 8h (for ever)" value={spec.for ?? ""} onInput={set("for")} />
    </>
  );
}

// clean drops empty fields, so the API sees what the person wrote.
function clean(s: RuleSpec): RuleSpec {
  const out: RuleSpec = { action: s.action };
  for (const k of ["agent", "machine", "tool", "command", "for"] as const) if (s[k]) out[k] = s[k];
  if (s.paths?.length) out.paths = s.paths;
  return out;
}

// on is the query naming machine's rules: none for this machine's own.
function on(machine: string | undefined, here: string): string {
  return machine && machine !== here ? `?machine=${encodeURIComponent(machine)}` : "";
}

export function Rules({ here, machines: joined }: { here: string; machines: string[] }) {
  const [open, setOpen] = useState(false);
  const [machine, setMachine] = useState(here);
  const [list, setList] = useState<Entry[]>([]);
  const [err, setErr] = useState("");
  const [draft, setDraft] = useState<RuleSpec>({ action: "allow" });
  const [editing, setEditing] = useState<{ id: string; spec: RuleSpec } | null>(null);
  const [probe, setProbe] = useState({ agent: "", tool: "Bash", command: "" });
  const [answer, setAnswer] = useState<Answer | null>(null);
  const addId = useAddId("r");
  // The machines, this one first; none to pick outside a cluster's hub.
  const machines = [...new Set([here, ...joined].filter(Boolean))];
  const q = on(machine, here);
  // The machine shown now: an answer for one picked before is dropped.
  const shown = useRef(q);
  shown.current = q;
  const load = () => {
    const asked = q;
    return api<{ rules: Entry[] }>("GET", `/api/rules${asked}`).then(
      (j) => asked === shown.current && setList(j.rules),
      (e) => {
        if (asked !== shown.current) return;
        setList([]);
        setErr(String(e.message ?? e));
      },
    );
  };
  useEffect(() => {
    if (open) void load();
  }, [open, q]);
  const pick = (m: string) => {
    setMachine(m);
    setErr("");
    setAnswer(null);
    setEditing(null);
    setList([]);
  };
  const act = async (f: () => Promise<unknown>): Promise<boolean> => {
    setErr("");
    let ok = true;
    try {
      await f();
    } catch (e) {
      setErr(String((e as Error).message));
      ok = false;
    }
    void load();
    return ok;
  };
  const add = (e: Event) => {
    e.preventDefault();
    const body = clean(draft);
    const id = addId.idFor({ on: q, ...body });
    void act(async () => {
      await sendAdd(`/api/rules${q}`, { ...body, id }, "rule");
      addId.done();
    }).then((ok) => ok && setDraft({ action: "allow" }));
  };
  const save = (e: Event) => {
    e.preventDefault();
    if (editing) void act(() => api("PUT", `/api/rules/${encodeURIComponent(editing.id)}${q}`, clean(editing.spec))).then((ok) => ok && setEditing(null));
  };
  const test = (e: Event) => {
    e.preventDefault();
    setErr("");
    const body = { tool: probe.tool, ...(probe.agent ? { agent: probe.agent } : {}), ...(probe.command ? { command: probe.command } : {}) };
    api<Answer>("POST", `/api/rules/test${q}`, body).then(setAnswer, (e) => setErr(String(e.message ?? e)));
  };
  return (
    <details class="rules" onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>Rules</summary>
      {machines.length > 1 && (
        <label class="rule-machine">
          Machine{" "}
          <select aria-label="Rules of machine" value={machine} onChange={(e) => pick((e.target as HTMLSelectElement).value)}>
            {machines.map((m) => (
              <option key={m} value={m}>{m === here ? `${m} (this one)` : m}</option>
            ))}
          </select>
          {machine !== here && <span class="hint"> {machine}'s own rules: kept there, they answer its cards with this hub away or not.</span>}
        </label>
      )}
      {err && <p role="alert" class="hint error">{err}</p>}
      <ol class="rule-list" aria-label="Approval rules, in the order they answer">
        {list.map((r) => (
          <li key={r.n} data-rule={r.n} data-from={r.from} class={r.expired ? "expired" : ""}>
            {editing && editing.id === r.id ? (
              <form class="rule-edit" onSubmit={save} aria-label={`Edit rule ${r.n}`}>
                <RuleFields spec={editing.spec} onChange={(spec) => setEditing({ id: editing.id, spec })} idp={`Rule ${r.n}`} />
                <button type="submit">Save rule {r.n}</button>
                <button type="button" class="link" onClick={() => setEditing(null)}>Cancel</button>
              </form>
            ) : (
              <>
                <span class="rule-n">{r.n}</span> <code class="rule-text">{r.text}</code>
                <span class="hint">
                  {" "}· {r.from === "config" ? "config (read-only)" : `made${r.created_by ? ` by ${r.created_by}` : ""}`}
                  {r.expired ? " · expired" : r.expires_at ? ` · until ${until(r.expires_at)}` : ""}
                </span>
                {r.id && (
                  <span>
                    {" "}
                    <button type="button" class="link edit" aria-label={`Edit rule ${r.n}`} onClick={() => setEditing({ id: r.id!, spec: clean(r) })}>Edit</button>{" "}
                    <button
                      type="button"
                      class="link delete"
                      aria-label={`Remove rule ${r.n}`}
                      onClick={() => confirm(`Remove rule ${r.n}? Cards it answered stay answered.`) && act(() => api("DELETE", `/api/rules/${encodeURIComponent(r.id!)}${q}`))}
                    >
                      Remove
                    </button>
                  </span>
                )}
              </>
            )}
          </li>
        ))}
        {open && !list.length && !err && <li class="hint">No rules: every card asks you.</li>}
      </ol>
      <form class="rule-add" onSubmit={add} aria-label="Add a rule">
        <span class="hint">Add a rule (after those above)</span>
        <RuleFields spec={draft} onChange={setDraft} idp="New rule" />
        <button type="submit">Add rule</button>
      </form>
      <form class="rule-test" onSubmit={test} aria-label="Test the rules">
        <span class="hint">Which rule would answer?</span>
        <input aria-label="Test agent" placeholder="agent" value={probe.agent} onInput={(e) => setProbe({ ...probe, agent: (e.target as HTMLInputElement).value })} />
        <input aria-label="Test tool" placeholder="tool" required value={probe.tool} onInput={(e) => setProbe({ ...probe, tool: (e.target as HTMLInputElement).value })} />
        <input aria-label="Test command" placeholder="go test ./..." value={probe.command} onInput={(e) => setProbe({ ...probe, command: (e.target as HTMLInputElement).value })} />
        <button type="submit">Test</button>
        {answer && (
          <p class="rule-answer" role="status">
            {answer.rule ? `${answer.action} by ${answer.by}` : "ask"}
            {answer.reason ? `: ${answer.reason}` : ""}
          </p>
        )}
      </form>
    </details>
  );
}

// MakeRule is a live permission card's "Make a rule…": the proposed rule,
// editable; saving it keeps the rule and allows this card once.
export function MakeRule({ store, requestId, tool, input, allowOnce }: { store: Store; requestId: string; tool: string; input: unknown; allowOnce: string }) {
  const th = store.state.chat.thread;
  const [spec, setSpec] = useState<RuleSpec | null>(null);
  const [err, setErr] = useState("");
  const addId = useAddId("r");
  // Rules are each machine's own: a card of another machine's thread (at a
  // cluster's hub) is answered by that machine's rules, so the rule is made
  // there.
  const here = store.state.node ?? "";
  const machine = th?.node && th.node !== here ? th.node : "";
  if (!spec) {
    return (
      <button type="button" class="opt make-rule" onClick={() => setSpec(proposeRule(tool, input, th?.agent ?? "", th?.cwd ?? ""))}>
        Make a rule…
      </button>
    );
  }
  const save = async (e: Event) => {
    e.preventDefault();
    setErr("");
    try {
      const body = clean(spec);
      const id = addId.idFor({ on: machine, ...body });
      await sendAdd(`/api/rules${on(machine, here)}`, { ...body, id }, "rule");
      addId.done();
    } catch (x) {
      setErr(String((x as Error).message));
      return;
    }
    store.answerPermission(requestId, allowOnce);
    setSpec(null);
  };
  return (
    <form class="make-rule-form" onSubmit={save} aria-label="Make a rule from this card" data-machine={machine || undefined}>
      {machine && <span class="hint">A rule of machine {machine}, kept there: it answers {machine}'s cards.</span>}
      {err && <p role="alert" class="hint error">{err}</p>}
      <RuleFields spec={spec} onChange={setSpec} idp="Proposed rule" />
      <button type="submit">Save rule and allow</button>
      <button type="button" class="link" onClick={() => setSpec(null)}>Cancel</button>
    </form>
  );
}
