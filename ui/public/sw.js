// parley's service worker: the installed app's shell offline, and Web Push.
// A push carries {kind, title, body, tag, url} (internal/push): "open" shows a
// notification tagged with its card; "close" (the card was answered anywhere)
// replaces it and takes it away; "turn" and "error" (optional, per device) show
// one tagged with the thread.
const SHELL = "parley-shell-v1";

self.addEventListener("install", (e) => {
  e.waitUntil(
    (async () => {
      const cache = await caches.open(SHELL);
      const r = await fetch("/", { credentials: "same-origin" });
      if (!r.ok) return; // not signed in: nothing to keep
      const html = await r.clone().text();
      await cache.put("/", r);
      const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]);
      await cache.addAll(["/manifest.webmanifest", "/icon.svg", "/icon-192.png", "/icon-512.png", ...assets]);
    })().then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (e) => {
  e.waitUntil(
    (async () => {
      for (const k of await caches.keys()) if (k !== SHELL) await caches.delete(k);
      await self.clients.claim();
    })(),
  );
});

self.addEventListener("fetch", (e) => {
  const req = e.request;
  if (req.method !== "GET") return;
  const url = new URL(req.url);
  if (url.origin !== location.origin) return;
  if (req.mode === "navigate" && url.pathname === "/" && !url.search) {
    // The dashboard from the network, kept for offline; the kept one, marked
    // as such, when the network or parley is away. Other pages (the sign-in
    // links) are never touched.
    e.respondWith(
      fetch(req)
        .then((r) => {
          if (r.ok) {
            const copy = r.clone();
            e.waitUntil(caches.open(SHELL).then((c) => c.put("/", copy)));
          }
          return r;
        })
        .catch(async () => {
          const kept = await caches.match("/");
          if (!kept) return Response.error();
          const html = (await kept.text()).replace("<head>", '<head><meta name="parley-offline" content="1">');
          return new Response(html, { headers: { "Content-Type": "text/html; charset=utf-8" } });
        }),
    );
    return;
  }
  if (url.pathname.startsWith("/assets/")) {
    // Hashed names never change: the kept copy, else the network (kept).
    e.respondWith(
      caches.match(req).then(
        (hit) =>
          hit ??
          fetch(req).then((r) => {
            if (r.ok) {
              const copy = r.clone();
              e.waitUntil(caches.open(SHELL).then((c) => c.put(req, copy)));
            }
            return r;
          }),
      ),
    );
  }
});

// tell says to the open pages what the worker did with a push (their console
// for an error; "push-shown" once a notification is shown or taken away).
// Tests wait for it: asking getNotifications() while showNotification() is
// still under way can find the new notification not yet displayed, and
// Chromium then deletes it from its notification store as stale.
async function tell(msg) {
  for (const w of await self.clients.matchAll({ type: "window", includeUncontrolled: true })) w.postMessage(msg);
}

self.addEventListener("push", (e) => {
  let m;
  try {
    m = e.data ? e.data.json() : null;
  } catch {
    m = null;
  }
  if (!m || typeof m.tag !== "string") return;
  e.waitUntil(
    (async () => {
      const data = { url: typeof m.url === "string" ? m.url : "/", thread: m.thread, request_id: m.request_id };
      if (m.kind === "close") {
        // Replace, then take away: a browser may require each push to show something.
        await self.registration.showNotification("Answered", { body: m.body || "", tag: m.tag, silent: true, data });
        for (const n of await self.registration.getNotifications({ tag: m.tag })) n.close();
      } else {
        await self.registration.showNotification(m.title || "parley", {
          body: m.body || "",
          tag: m.tag,
          renotify: true,
          // A card waits for an answer; a finished turn or an error is news.
          requireInteraction: m.kind === "open",
          icon: "/icon-192.png",
          data,
        });
      }
      await tell({ type: "push-shown", kind: m.kind === "close" ? "close" : "open", tag: m.tag });
    })().catch((err) => tell({ type: "push-error", message: String(err) })),
  );
});

// openFromNotification is what a tap on a notification does: it goes, and an
// open window of parley's is brought to the thread at its card (or one opens).
// A focus the browser refuses (no tap behind it) still leaves the window moved.
async function openFromNotification(n) {
  n.close();
  const url = (n.data && n.data.url) || "/";
  const wins = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const w of wins) {
    if (new URL(w.url).origin !== location.origin) continue;
    w.postMessage({ type: "open", url });
    return w.focus().catch(() => w);
  }
  return self.clients.openWindow(url);
}

self.addEventListener("notificationclick", (e) => {
  e.waitUntil(openFromNotification(e.notification));
});
