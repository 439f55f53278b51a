// Activity: a thread's or a device's audit trail (GET /api/audit?thread= or
// ?device=): who did what, from where, newest first, a page at a time
// ("Older entries" pages back with ?before=). Shown in a thread's actions and
// beside each device in Devices.

import { useEffect, useState } from "preact/hooks";
import { api } from "./api";

type Entry = { seq: number; ts: string; kind: string; actor: string; thread?: string; subject: string; detail?: Record<string, unknown> };

const pageSize = 20;

// who names an entry's actor as a person reads it.
function who(actor: string, names: Record<string, string>): string {
  const [kind, rest] = actor.includes(":") ? [actor.slice(0, actor.indexOf(":")), actor.slice(actor.indexOf(":") + 1)] : [actor, ""];
  switch (kind) {
    case "device":
      return names[rest] ? `${names[rest]} (device)` : `device ${rest}`;
    case "token":
      return "the token (CLI or a script)";
    case "cli":
      return "the parley command";
    case "rule":
      return `rule ${rest}`;
    case "surface":
      return rest;
    case "machine":
      return `machine ${rest}`;
    case "parley":
      return "parley";
    default:
      return actor;
  }
}

// where is the machine and route an entry names, when it names them.
function where(e: Entry): string {
  const d = e.detail ?? {};
  return [d.machine && `on ${d.machine}`, d.route && `via ${d.route}`].filter(Boolean).join(" ");
}

export function AuditList({ thread, device, label }: { thread?: string; device?: string; label: string }) {
  const [entries, setEntries] = useState<Entry[]>([]);
  const [more, setMore] = useState(false);
  const [loading, setLoading] = useState(true);
  const [err, setErr] = useState("");
  const [names, setNames] = useState<Record<string, string>>({});
  const load = async (before?: number) => {
    setLoading(true);
    setErr("");
    const q = new URLSearchParams({ limit: String(pageSize) });
    if (thread) q.set("thread", thread);
    if (device) q.set("device", device);
    if (before) q.set("before", String(before));
    try {
      const j = await api<{ entries: Entry[] }>("GET", "/api/audit?" + q.toString());
      const page = [...j.entries].reverse(); // the API answers oldest first
      setEntries((es) => (before ? [...es, ...page] : page));
      setMore(j.entries.length === pageSize);
    } catch (e) {
      setErr((e as Error).message);
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    void load();
    api<{ devices: { id: string; name: string }[] }>("GET", "/api/devices").then(
      (j) => setNames(Object.fromEntries(j.devices.map((d) => [d.id, d.name]))),
      () => undefined, // without names, devices are shown by id
    );
  }, [thread, device]);
  return (
    <section class="audit" aria-label={label} data-audit="">
      {err && <p role="alert" class="hint">{err}</p>}
      {!loading && !err && entries.length === 0 && <p class="hint">Nothing recorded yet.</p>}
      <ol class="audit-list">
        {entries.map((e) => (
          <li key={e.seq} data-seq={e.seq} data-kind={e.kind}>
            <time class="hint" dateTime={e.ts}>{new Date(e.ts).toLocaleString()}</time>{" "}
            <span class="audit-who">{who(e.actor, names)}</span>: <span class="audit-what">{e.subject}</span>
            {where(e) && <span class="hint"> · {where(e)}</span>}
          </li>
        ))}
      </ol>
      {more && (
        <button type="button" class="link" disabled={loading} onClick={() => load(entries[entries.length - 1]?.seq)}>
          Older entries
        </button>
      )}
    </section>
  );
}
