// What both layouts say while they show this device's copy (offline.ts)
// because parley is away: the thread is read-only, and what is typed waits.

import type { Store } from "../store";

function when(ts: string): string {
  const d = new Date(ts);
  return isNaN(d.getTime()) ? "" : ` as of ${d.toLocaleString()}`;
}

export function KeptChat({ store }: { store: Store }) {
  const k = store.state.chat.kept;
  if (k === undefined) return null;
  return (
    <div class="banner kept" role="status" data-kept="">
      Offline: this device's copy of the thread{when(k)}, read-only. Messages you send wait here and go out when parley is back.
    </div>
  );
}

export function KeptList({ store }: { store: Store }) {
  if (!store.state.keptList) return null;
  return (
    <div class="offline-note" role="status" data-kept-list="">
      Offline: this device's copy of your recent threads.
    </div>
  );
}
