// The thread list's live feed: /api/threads/changes names the threads whose
// log grew (or, at a hub, says a machine came or went), and the list and the
// agents refetch. Polling remains the fallback while the
// stream is down (the browser reconnects it by itself).

export type ChangeFeed = { live(): boolean; close(): void };

export function watchThreads(onChange: () => void): ChangeFeed {
  let live = false;
  const es = new EventSource("/api/threads/changes");
  es.addEventListener("ready", () => {
    live = true;
    onChange(); // what changed while the stream was down
  });
  es.addEventListener("threads", () => onChange());
  // At a cluster's hub: a machine came online or went offline (its agents' status).
  es.addEventListener("machines", () => onChange());
  es.onerror = () => {
    live = false;
  };
  return { live: () => live, close: () => es.close() };
}
