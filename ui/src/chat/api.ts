// The dashboard's calls to parley's REST API, and adds that are kept once:
// an add carries an id chosen here, so the same add sent again after a lost
// answer (the connection dropped, or the machine that keeps it did not
// answer the hub: 503 "unanswered") is made once.

import { useRef } from "preact/hooks";

// ApiError is a refusal with its code ("unanswered": the machine that keeps
// it did not answer, so it may have been made).
export class ApiError extends Error {
  constructor(message: string, readonly code?: string) {
    super(message);
  }
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const r = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw new ApiError(j?.error?.message ?? `HTTP ${r.status}`, j?.error?.code);
  return j as T;
}

// newAddId is an id for an add, with its kind's prefix ("sch", "r")
// (crypto.getRandomValues works off https too, unlike randomUUID).
function newAddId(prefix: string): string {
  const b = crypto.getRandomValues(new Uint8Array(12));
  return prefix + "_" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

// useAddId keeps one id per add the person makes: the same body sent again
// (by sendAdd's own retry, or the person pressing Add again after a lost
// answer) keeps it; a changed body gets a new one. done forgets it once
// the add was answered.
export function useAddId(prefix: string): { idFor: (body: unknown) => string; done: () => void } {
  const pending = useRef<{ id: string; sent: string } | null>(null);
  return {
    idFor(body) {
      const sent = JSON.stringify(body);
      if (pending.current?.sent !== sent) pending.current = { id: newAddId(prefix), sent };
      return pending.current.id;
    },
    done() {
      pending.current = null;
    },
  };
}

// sendAdd posts an add that names its id, three times at most: an add whose
// answer was lost may have been made, and the same add again is made once.
export async function sendAdd<T>(path: string, body: Record<string, unknown>, what: string): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await api<T>("POST", path, body);
    } catch (e) {
      const lost = !(e instanceof ApiError) || e.code === "unanswered";
      if (!lost) throw e;
      if (attempt === 3) {
        throw new Error(`No answer: the ${what} may have been made. Press Add again to send the same add: it is made once. (${(e as Error).message})`);
      }
      await new Promise((ok) => setTimeout(ok, attempt * 1000));
    }
  }
}
