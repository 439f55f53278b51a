// The agent processes parley runs for threads, with their memory, and a button
// to unload one (its next message starts it again, resuming the conversation).
// Shown where the agents are, desktop and phone alike; polled while shown.

import { useEffect, useState } from "preact/hooks";
import type { Store } from "../store";
import { threadLabel } from "../store";

type LiveSession = { thread: string; agent: string; cwd: string; pid?: number; busy: boolean; since: string; rss_bytes?: number };

const mb = (b?: number) => (b ? `${Math.round(b / (1 << 20))} MB` : "memory unknown");

// folderName is a folder's last part ("proj" of /home/me/proj), for a thread
// this list does not have (archived): a raw thread id tells a person nothing.
function folderName(cwd: string): string {
  return cwd.replace(/\/+$/, "").split("/").pop() || cwd || "an unknown folder";
}

export function LiveAgents({ store }: { store: Store }) {
  const [live, setLive] = useState<LiveSession[]>([]);
  const [note, setNote] = useState("");
  const load = () => store.getJSON<{ processes: LiveSession[] }>("/api/processes").then((v) => setLive(v.processes ?? []), () => {});
  useEffect(() => {
    void load();
    const t = setInterval(load, 5000);
    return () => clearInterval(t);
  }, []);
  // A turn's start or end changes what runs: look again when the list changes.
  useEffect(() => void load(), [store.state.threads]);
  if (!live.length) return null;
  const unload = async (s: LiveSession) => {
    setNote("");
    const r = await fetch(`/api/threads/${encodeURIComponent(s.thread)}/unload`, { method: "POST", credentials: "same-origin" });
    if (!r.ok) {
      const body = (await r.json().catch(() => null)) as { error?: { message?: string } } | null;
      setNote(body?.error?.message ?? `could not unload (${r.status})`);
    }
    void load();
  };
  return (
    <>
      <h3>Live agents</h3>
      <ul class="agents live" aria-label="Live agents">
        {live.map((s) => {
          const t = store.state.threads.find((x) => x.id === s.thread);
          return (
            <li key={s.thread} data-live={s.thread}>
              <span class={`dot ${s.busy ? "st-working" : "st-idle"}`} aria-hidden="true" />
              <span class="name" title={s.cwd}>{s.agent} · {t ? threadLabel(t) : `a thread in ${folderName(s.cwd)}`}</span>
              <span class="hint" data-rss="">{mb(s.rss_bytes)}{s.pid ? ` · pid ${s.pid}` : ""}</span>
              <button type="button" class="link unload" disabled={s.busy} title={s.busy ? "A turn is running: stop it first" : "End this agent process; the thread's next message starts it again"} onClick={() => void unload(s)}>
                Unload
              </button>
            </li>
          );
        })}
      </ul>
      {note && <div class="hint" role="alert">{note}</div>}
    </>
  );
}
