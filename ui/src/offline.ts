// This device's copy of the recent threads and their last events, kept in
// IndexedDB and bounded (THREADS threads, EVENTS events each), so the
// installed app opened while parley is away still shows them, read-only.
// Whatever IndexedDB refuses is simply not kept: the copy is a convenience.

import type { ServerEvent, Thread } from "./protocol";

const DB = "parley-offline";
export const THREADS = 20;
export const EVENTS = 300;

export type Kept = { id: string; thread: Thread; events: ServerEvent[]; saved_at: string };

let opening: Promise<IDBDatabase> | undefined;

function db(): Promise<IDBDatabase> {
  opening ??= new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => {
      req.result.createObjectStore("lists");
      req.result.createObjectStore("logs", { keyPath: "id" });
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
  opening.catch(() => (opening = undefined));
  return opening;
}

async function tx<T>(store: string, mode: IDBTransactionMode, f: (s: IDBObjectStore) => IDBRequest<T> | void): Promise<T | undefined> {
  const d = await db();
  return new Promise((resolve, reject) => {
    const t = d.transaction(store, mode);
    const req = f(t.objectStore(store));
    t.oncomplete = () => resolve(req ? req.result : undefined);
    t.onerror = () => reject(t.error);
    t.onabort = () => reject(t.error);
  });
}

// keepThreads keeps the newest threads of the list and drops the logs of
// the ones that fell out of it.
export async function keepThreads(threads: Thread[]): Promise<void> {
  const list = threads.slice(0, THREADS);
  const ids = new Set(list.map((t) => t.id));
  try {
    await tx("lists", "readwrite", (s) => s.put(list, "threads"));
    const keys = (await tx("logs", "readonly", (s) => s.getAllKeys())) ?? [];
    for (const k of keys) if (!ids.has(String(k))) await tx("logs", "readwrite", (s) => s.delete(k));
  } catch {
    /* not kept */
  }
}

// keepLog keeps a thread's last EVENTS events.
export async function keepLog(thread: Thread, events: ServerEvent[]): Promise<void> {
  const kept: Kept = { id: thread.id, thread, events: events.slice(-EVENTS), saved_at: new Date().toISOString() };
  try {
    await tx("logs", "readwrite", (s) => s.put(kept));
  } catch {
    /* not kept */
  }
}

export async function keptThreads(): Promise<Thread[]> {
  try {
    return ((await tx("lists", "readonly", (s) => s.get("threads"))) as Thread[] | undefined) ?? [];
  } catch {
    return [];
  }
}

export async function keptLog(id: string): Promise<Kept | undefined> {
  try {
    return (await tx("logs", "readonly", (s) => s.get(id))) as Kept | undefined;
  } catch {
    return undefined;
  }
}
