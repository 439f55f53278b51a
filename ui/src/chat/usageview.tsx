// The Usage view: what the agents reported they spent (tokens, cost), summed
// per day, agent, machine or thread (GET /api/usage), stopped turns included.

import { useEffect, useState } from "preact/hooks";
import type { Store } from "../store";
import { n, threadUsage, usd, type UsageTotals } from "./usage";

// ThreadTotals is the header's line of a thread's totals. The line is there
// before the first turn's totals come (blank), so their coming never moves the
// thread's buttons under a person's finger or pointer.
export function ThreadTotals({ totals }: { totals?: UsageTotals | null }) {
  return <div class="hint usage" data-usage="">{(totals && threadUsage(totals)) || "\u00a0"}</div>;
}

type Sum = { key: string; title?: string; node?: string; turns: number; input_tokens: number; output_tokens: number; cost_usd: number };
type Answer = { total: Sum; by_day: Sum[]; by_agent: Sum[]; by_machine: Sum[]; by_thread: Sum[]; undated?: string };

const groups = [
  { id: "by_day", label: "Day" },
  { id: "by_agent", label: "Agent" },
  { id: "by_machine", label: "Machine" },
  { id: "by_thread", label: "Thread" },
] as const;
type Group = (typeof groups)[number]["id"];

const periods = [
  { days: 7, label: "last 7 days" },
  { days: 30, label: "last 30 days" },
  { days: 0, label: "all kept" },
];

function sumLine(s: Sum): string {
  const parts = [`${s.turns} turn${s.turns === 1 ? "" : "s"}`, `${n(s.input_tokens)} in`, `${n(s.output_tokens)} out`];
  return parts.join(" · ");
}

export function UsageView({ store }: { store: Store }) {
  const [open, setOpen] = useState(false);
  const [group, setGroup] = useState<Group>("by_day");
  const [days, setDays] = useState(30);
  const [data, setData] = useState<Answer | null>(null);
  const [err, setErr] = useState("");
  useEffect(() => {
    if (!open) return;
    let live = true;
    const tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
    store.getJSON<Answer>(`/api/usage?days=${days}${tz ? "&tz=" + encodeURIComponent(tz) : ""}`).then(
      (j) => { if (live) { setData(j); setErr(""); } },
      (e) => live && setErr(`Usage could not be read: ${(e as Error).message ?? e}`),
    );
    return () => { live = false; };
  }, [open, days]);
  const here = store.state.node;
  const name = (s: Sum): string => {
    switch (group) {
      case "by_machine": return s.key || here || "this machine";
      case "by_agent": return s.node && s.node !== here ? `${s.key} on ${s.node}` : s.key;
      case "by_thread": return (s.title || s.key) + (s.node && s.node !== here ? ` (${s.node})` : "");
      default: return s.key;
    }
  };
  const rows = data?.[group] ?? [];
  return (
    <details class="usage-view" open={open} onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>Usage</summary>
      <div class="row wrap usage-controls">
        <label>
          Per
          <select aria-label="Group usage by" value={group} onChange={(e) => setGroup((e.target as HTMLSelectElement).value as Group)}>
            {groups.map((g) => <option key={g.id} value={g.id}>{g.label.toLowerCase()}</option>)}
          </select>
        </label>
        <label>
          For
          <select aria-label="Usage period" value={String(days)} onChange={(e) => setDays(Number((e.target as HTMLSelectElement).value))}>
            {periods.map((p) => <option key={p.days} value={String(p.days)}>{p.label}</option>)}
          </select>
        </label>
      </div>
      {err && <p role="alert" class="hint">{err}</p>}
      {data && (
        <p class="hint" data-usage-total="">
          In all: {usd(data.total.cost_usd)} · {sumLine(data.total)}
          {data.total.turns === 0 && " (no agent has reported usage in this period)"}
        </p>
      )}
      {data?.undated && group === "by_day" && <p class="hint">{data.undated}.</p>}
      <ul class="usage-list" aria-label="Usage per group">
        {rows.map((s) => (
          <li key={s.key + "/" + (s.node ?? "")} data-usage-key={s.key}>
            <span class="u-name">{name(s)}</span>
            <span class="u-cost">{usd(s.cost_usd)}</span>
            <span class="hint u-line">{sumLine(s)}</span>
          </li>
        ))}
      </ul>
      <p class="hint">As the agents reported it, per turn (a stopped turn included); an agent that reports no cost shows $0.</p>
    </details>
  );
}
