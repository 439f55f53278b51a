// Devices: the signed-in devices (GET /api/devices), "Add a device" (a one-time
// pairing QR code) and revocation. This device's notifications: notify.tsx.

import { useEffect, useRef, useState } from "preact/hooks";
import { AuditList } from "./audit";

type Device = {
  id: string;
  name: string;
  kind: string;
  paired_at: string;
  last_seen: string;
  push: boolean;
  push_turns: boolean;
  push_errors: boolean;
  push_notices: boolean;
  current?: boolean;
};
type PairCode = { url: string; expires_at: string; qr_png: string };

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

function when(ts: string): string {
  const d = new Date(ts);
  return isFinite(d.getTime()) ? d.toLocaleString() : "";
}

export function Devices() {
  const [open, setOpen] = useState(false);
  const [devices, setDevices] = useState<Device[]>([]);
  const [pair, setPair] = useState<PairCode | null>(null);
  const [err, setErr] = useState("");
  const [activity, setActivity] = useState(""); // the device whose audit trail is shown
  // The QR code is what "Add a device" is for: bring it into view (the list
  // sits at the foot of the screen, the code would open below its edge).
  const qr = useRef<HTMLElement>(null);
  useEffect(() => {
    if (pair) qr.current?.scrollIntoView({ block: "nearest" });
  }, [pair]);
  const load = () => api<{ devices: Device[] }>("GET", "/api/devices").then((j) => setDevices(j.devices), (e) => setErr(String(e.message ?? e)));
  useEffect(() => {
    if (open) void load();
  }, [open]);
  const add = async () => {
    setErr("");
    try {
      setPair(await api<PairCode>("POST", "/api/pair-codes", { name: "" }));
    } catch (e) {
      setErr(String((e as Error).message));
    }
  };
  const revoke = async (d: Device) => {
    if (!confirm(`Sign ${d.name} out? Its session ends at once.`)) return;
    try {
      await api("DELETE", "/api/devices/" + encodeURIComponent(d.id));
    } catch (e) {
      setErr(String((e as Error).message));
    }
    if (d.current) location.assign("/");
    else void load();
  };
  // setPrefs turns a device's optional pushes (a finished turn, an error, a notice) on or off.
  const setPrefs = async (d: Device, p: { push_turns?: boolean; push_errors?: boolean; push_notices?: boolean }) => {
    setErr("");
    try {
      const v = await api<Device>("PATCH", "/api/devices/" + encodeURIComponent(d.id), p);
      setDevices((ds) => ds.map((x) => (x.id === d.id ? { ...x, push_turns: v.push_turns, push_errors: v.push_errors, push_notices: v.push_notices } : x)));
    } catch (e) {
      setErr(String((e as Error).message));
    }
  };
  return (
    <details class="devices" onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>Devices</summary>
      <button type="button" class="link add-device" onClick={add}>Add a device</button>
      {pair && (
        <figure class="pair" aria-label="Pairing code" ref={qr}>
          {pair.url.startsWith("http:") && (
            <p class="hint plain-http" role="alert" data-plain-http="">
              This link is plain HTTP: on a network, the phone's session and every conversation would travel readable to anyone on it, and a phone
              allows no installed app or notifications there. Serve parley over TLS first (<code>--tls-cert</code>/<code>--tls-key</code>, or
              {" "}<code>--tailscale</code>; the README's “From a phone”).
            </p>
          )}
          <img src={pair.qr_png} width={200} height={200} alt="QR code of the pairing link" />
          <figcaption>
            Scan with the phone's camera, or open <a href={pair.url} class="pair-url">{pair.url}</a>. It works once, until {new Date(pair.expires_at).toLocaleTimeString()}.
          </figcaption>
        </figure>
      )}
      {err && <p role="alert" class="hint">{err}</p>}
      <ul class="device-list">
        {devices.map((d) => (
          <li key={d.id} data-device={d.id}>
            <span class="name">{d.name}{d.current && <span class="hint"> (this device)</span>}</span>
            <span class="hint">{d.kind} · paired {when(d.paired_at)} · seen {when(d.last_seen)} · push {d.push ? "on" : "off"}</span>
            <label class="hint">
              <input type="checkbox" class="push-turns" checked={d.push_turns} onChange={(e) => setPrefs(d, { push_turns: (e.target as HTMLInputElement).checked })} /> finished turns
            </label>
            <label class="hint">
              <input type="checkbox" class="push-errors" checked={d.push_errors} onChange={(e) => setPrefs(d, { push_errors: (e.target as HTMLInputElement).checked })} /> errors
            </label>
            <label class="hint">
              <input type="checkbox" class="push-notices" checked={d.push_notices} onChange={(e) => setPrefs(d, { push_notices: (e.target as HTMLInputElement).checked })} /> notices
            </label>
            <button type="button" class="link" data-device-activity="" aria-expanded={activity === d.id} aria-label={`Activity of ${d.name}`}
              onClick={() => setActivity(activity === d.id ? "" : d.id)}>Activity</button>
            <button type="button" class="link" onClick={() => revoke(d)}>Revoke</button>
            {activity === d.id && <AuditList device={d.id} label={`What ${d.name} did`} />}
          </li>
        ))}
      </ul>
    </details>
  );
}

// servedFromCache: the service worker answered with the kept shell because
// the network or parley was away (public/sw.js marks it).
const servedFromCache = !!document.querySelector('meta[name="parley-offline"]');

// Offline says so while the browser is offline or the page is the kept shell:
// the installed app still opens, but nothing can be answered until the
// connection is back (then the kept shell reloads itself).
export function Offline() {
  const [offline, setOffline] = useState(!navigator.onLine || servedFromCache);
  useEffect(() => {
    const f = () => {
      if (navigator.onLine && servedFromCache) location.reload();
      setOffline(!navigator.onLine || servedFromCache);
    };
    window.addEventListener("online", f);
    window.addEventListener("offline", f);
    return () => {
      window.removeEventListener("online", f);
      window.removeEventListener("offline", f);
    };
  }, []);
  if (!offline) return null;
  return <div class="offline" role="status">Offline: this is the saved app; agents and answers need the connection back.</div>;
}

// installServiceWorker registers the worker (the installable app's shell and
// Web Push) and follows its "open" messages: a tapped notification brings this
// window to the thread at its card.
export function installServiceWorker() {
  if (!("serviceWorker" in navigator)) return;
  navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => undefined);
  navigator.serviceWorker.addEventListener("message", (e) => {
    const m = e.data as { type?: string; url?: string; message?: string };
    if (m?.type === "open" && typeof m.url === "string" && m.url.startsWith("/#/")) location.hash = m.url.slice(1);
    if (m?.type === "push-error") {
      console.warn("parley: a push could not be shown:", m.message);
      const w = window as unknown as { parleyPushErrors?: string[] };
      (w.parleyPushErrors ??= []).push(String(m.message)); // for tests and the curious
    }
  });
}

// reportScreen tells the server which thread this device shows (none while the
// page is hidden): a device gets no push about the thread it has on screen.
let lastScreen: string | undefined;
export function reportScreen(thread: string | undefined) {
  const shown = document.visibilityState === "visible" ? thread ?? "" : "";
  if (shown === lastScreen) return;
  lastScreen = shown;
  void fetch("/api/push/screen", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ thread: shown }),
    keepalive: true,
  }).catch(() => (lastScreen = undefined));
}

// scrollToCard brings the card a notification named (#/t/<id>?card=<rid>) into view.
export function scrollToCard() {
  const m = /[?&]card=([^&]+)/.exec(location.hash);
  if (!m) return;
  const el = document.querySelector(`[data-card="${CSS.escape(decodeURIComponent(m[1]))}"]`);
  if (el && !el.hasAttribute("data-shown")) {
    el.setAttribute("data-shown", "");
    el.scrollIntoView({ block: "center" });
  }
}
