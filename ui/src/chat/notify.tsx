// Notifications: one control for this device. It asks the browser's
// permission (notifications while a parley tab is open) and then subscribes
// the device to Web Push (notified with parley closed), each step bounded by a
// timeout, and says in words where it ended: on, blocked, unsupported, no
// service worker, no answer from the browser.

import { useEffect, useState } from "preact/hooks";

// How long the browser may take: its permission question waits for the
// person, the service worker and the push service for nobody.
const ASK_MS = 30000;
const WORKER_MS = 8000;
const SUBSCRIBE_MS = 15000;

class TimedOut extends Error {}

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new TimedOut()), ms);
    p.then(
      (v) => (clearTimeout(t), resolve(v)),
      (e) => (clearTimeout(t), reject(e)),
    );
  });
}

type Said = { text: string; on: "push" | "tab" | "" };

const words = {
  unsupported: "This browser cannot show notifications.",
  denied: "Notifications are blocked for this site: allow them in the browser's site settings, then turn them on here.",
  noAnswer: `The browser did not answer within ${ASK_MS / 1000} s: look for its question by the address bar, or allow notifications in the site settings, and try again.`,
  dismissed: "Not turned on: the browser's question was closed without an answer.",
  tab: "On while a parley tab is open.",
  noPush: "On while a parley tab is open; this browser has no Web Push, so nothing arrives with parley closed.",
  noWorker: "On while a parley tab is open; no service worker runs here (it needs HTTPS or localhost), so nothing arrives with parley closed.",
  push: "On: this device is notified when an agent asks, even with parley closed.",
  off: "Off for this device.",
};

const supported = () => typeof Notification !== "undefined";
const pushable = () => !!navigator.serviceWorker && typeof PushManager !== "undefined";

function keyBytes(b64: string): Uint8Array {
  const s = atob(b64.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const r = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(j?.error?.message ?? `HTTP ${r.status}`);
  return j as T;
}

// before is what the control says when the page opens, before any click.
function before(): Said {
  if (!supported()) return { text: words.unsupported, on: "" };
  if (Notification.permission === "denied") return { text: words.denied, on: "" };
  if (Notification.permission === "granted") return { text: words.tab, on: "tab" };
  return { text: "", on: "" };
}

// worker is the service worker's registration, or null when none comes.
async function worker(): Promise<ServiceWorkerRegistration | null> {
  try {
    return await within(navigator.serviceWorker.ready, WORKER_MS);
  } catch {
    return null;
  }
}

export function Notifications({ onChange }: { onChange?: () => void }) {
  const [said, setSaid] = useState<Said>(before);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    // Allowed before: is this device subscribed too?
    if (!supported() || Notification.permission !== "granted" || !pushable()) return;
    void navigator.serviceWorker.getRegistration().then(
      (reg) => reg?.pushManager.getSubscription().then((sub) => sub && setSaid({ text: words.push, on: "push" })),
      () => undefined,
    );
  }, []);
  const turnOn = async () => {
    setBusy(true);
    try {
      setSaid(await enable());
    } finally {
      setBusy(false);
      onChange?.();
    }
  };
  const turnOff = async () => {
    setBusy(true);
    try {
      const reg = await worker();
      await (await reg?.pushManager.getSubscription())?.unsubscribe();
      await api("DELETE", "/api/push/subscriptions").catch(() => undefined);
      setSaid({ text: words.off + (Notification.permission === "granted" ? " The browser still shows them while a parley tab is open; its site settings turn that off." : ""), on: "" });
    } finally {
      setBusy(false);
      onChange?.();
    }
  };
  const can = supported() && said.on !== "push";
  return (
    <div class="notify" data-notify={said.on || "off"}>
      {can && (
        <button type="button" class="link notify-opt-in" onClick={turnOn} disabled={busy} aria-busy={busy}>
          {busy ? "Turning on notifications…" : said.on === "tab" ? "Notify this device with parley closed" : "Turn on notifications"}
        </button>
      )}
      {said.on === "push" && (
        <button type="button" class="link notify-off" onClick={turnOff} disabled={busy}>
          Turn off notifications
        </button>
      )}
      {said.text && <p class="hint notify-said" role="status">{said.text}</p>}
    </div>
  );
}

// enable takes every step and says where it ended.
async function enable(): Promise<Said> {
  if (!supported()) return { text: words.unsupported, on: "" };
  let perm: NotificationPermission;
  try {
    perm = await within(Promise.resolve(Notification.requestPermission()), ASK_MS);
  } catch (e) {
    return { text: e instanceof TimedOut ? words.noAnswer : String((e as Error).message ?? e), on: "" };
  }
  if (perm === "denied") return { text: words.denied, on: "" };
  if (perm !== "granted") return { text: words.dismissed, on: "" };
  if (!pushable()) return { text: words.noPush, on: "tab" };
  const reg = await worker();
  if (!reg) return { text: words.noWorker, on: "tab" };
  try {
    const { public_key } = await within(api<{ public_key: string }>("GET", "/api/push/key"), SUBSCRIBE_MS);
    const sub = await within(reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(public_key) as BufferSource }), SUBSCRIBE_MS);
    await within(api("POST", "/api/push/subscriptions", sub.toJSON()), SUBSCRIBE_MS);
  } catch (e) {
    const why = e instanceof TimedOut ? "the push service did not answer" : String((e as Error).message ?? e);
    return { text: `${words.tab} Push to this device could not be set up (${why}), so nothing arrives with parley closed.`, on: "tab" };
  }
  return { text: words.push, on: "push" };
}
