// The outbox's files, kept in IndexedDB by message id: localStorage (5 MB, and
// base64 at that) holds only the outbox's text, so a few large attachments
// never crowd out a message typed after them.

import type { FileData } from "./protocol";

const DB = "parley";
const STORE = "outbox-files";

let opened: Promise<IDBDatabase> | null = null;

function db(): Promise<IDBDatabase> {
  if (!opened) {
    opened = new Promise((resolve, reject) => {
      if (typeof indexedDB === "undefined") {
        reject(new Error("this browser keeps no IndexedDB"));
        return;
      }
      const r = indexedDB.open(DB, 1);
      r.onupgradeneeded = () => r.result.createObjectStore(STORE);
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error ?? new Error("IndexedDB would not open"));
    });
    opened.catch(() => (opened = null));
  }
  return opened;
}

function run<T>(mode: IDBTransactionMode, f: (s: IDBObjectStore) => IDBRequest): Promise<T> {
  return db().then((d) => new Promise<T>((resolve, reject) => {
    const tx = d.transaction(STORE, mode);
    const req = f(tx.objectStore(STORE));
    tx.oncomplete = () => resolve(req.result as T);
    tx.onerror = () => reject(tx.error ?? req.error ?? new Error("IndexedDB failed"));
    tx.onabort = () => reject(tx.error ?? new Error("IndexedDB aborted the write (storage full?)"));
  }));
}

export const putFiles = (id: string, files: FileData[]) => run<void>("readwrite", (s) => s.put(files, id));
export const getFiles = (id: string) => run<FileData[] | undefined>("readonly", (s) => s.get(id));
export const dropFiles = (id: string) => run<void>("readwrite", (s) => s.delete(id)).catch(() => {});
