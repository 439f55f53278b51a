// The thread list's live feed: /api/threads/changes names the threads whose
// log grew, and the list refetches. Polling remains the fallback while the
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
  es.onerror = () => {
    live = false;
  };
  return { live: () => live, close: () => es.close() };
}
