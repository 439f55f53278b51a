// What both layouts share beyond the store: the hash route, navigation that opens
// the right chat, auto-scroll, notifications and the page-wide Esc-to-stop.

import { useEffect, useLayoutEffect, useReducer, useRef, useState } from "preact/hooks";
import { newID, type AgentInfo, type Thread } from "./protocol";
import type { Store } from "./store";
import { awayMachine, awayState } from "./chat/away";

export type Route = { view: "home" } | { view: "new" } | { view: "chat"; chat: string } | { view: "thread"; thread: string };

export function parseRoute(hash: string): Route {
  const m = /^#\/(c|t)\/([^/?#]+)/.exec(hash);
  if (m) return m[1] === "c" ? { view: "chat", chat: decodeURIComponent(m[2]) } : { view: "thread", thread: decodeURIComponent(m[2]) };
  if (hash.startsWith("#/new")) return { view: "new" };
  return { view: "home" };
}

export function useStore(store: Store) {
  const [, force] = useReducer((x: number, _: void) => x + 1, 0);
  useEffect(() => store.subscribe(() => force()), [store]);
  return store.state;
}

export function useRoute(): Route {
  const [r, setR] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const f = () => setR(parseRoute(location.hash));
    window.addEventListener("hashchange", f);
    return () => window.removeEventListener("hashchange", f);
  }, []);
  return r;
}

export function go(hash: string, replace = false) {
  if (replace) {
    history.replaceState(null, "", hash);
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  } else location.hash = hash;
}

// The thread the person picked, so the chat it opens is bound to it.
let wanted: Thread | undefined;

export const nav = {
  home: () => go("#/"),
  newThread: () => go("#/new"),
  thread(store: Store, t: Thread) {
    wanted = t;
    go("#/c/" + encodeURIComponent(store.chatFor(t.id) ?? newID("c_")));
  },
  start(store: Store, agent: string, cwd: string, text: string, node?: string) {
    const chat = newID("c_");
    go("#/c/" + chat);
    store.open(chat);
    opened = chat;
    store.sendMessage(text, { new: { cwd, agent, ...(node ? { node } : {}) } });
  },
  resume(store: Store, agent: string, sessionID: string, cwd: string) {
    wanted = { id: "", agent, session_id: sessionID, cwd, title: "", state: "" };
    go("#/c/" + newID("c_"));
  },
};

let opened = "";

// useChatRoute keeps the store connected to the chat the address bar names.
export function useChatRoute(store: Store, route: Route) {
  useEffect(() => {
    if (route.view === "thread") {
      const t = store.state.threads.find((x) => x.id === route.thread);
      const fetchIt = t ? Promise.resolve(t) : store.getJSON<Thread | { thread: Thread }>(`/api/threads/${encodeURIComponent(route.thread)}`).then((v) => ("thread" in v && typeof v.thread === "object" ? v.thread : (v as Thread)));
      // The query stays: ?card=<request id> (a tapped notification) still
      // names the card to bring into view once the chat shows it.
      const query = /\?[^#]*$/.exec(location.hash)?.[0] ?? "";
      fetchIt.then((th) => {
        wanted = th;
        go("#/c/" + encodeURIComponent(store.chatFor(th.id) ?? newID("c_")) + query, true);
      }, () => go("#/", true));
      return;
    }
    if (route.view !== "chat" || route.chat === opened) return;
    opened = route.chat;
    const t = wanted;
    wanted = undefined;
    store.open(route.chat, t && (t.id || t.session_id) ? t : undefined);
  }, [route.view === "chat" ? route.chat : route.view === "thread" ? "t:" + route.thread : route.view]);
}

// useStickToBottom scrolls a log to its end when new content arrives, unless the
// person has scrolled up to read: then nothing moves under them, and unseen
// counts the items that arrived since (for "jump to latest"). follow() goes
// back to the end and stays there (sending a message does).
export function useStickToBottom<T extends HTMLElement>(items: unknown[]) {
  const ref = useRef<T>(null);
  const stick = useRef(true);
  const seen = useRef(items.length);
  const [unseen, setUnseen] = useState(0);
  const count = useRef(items.length);
  count.current = items.length;
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const f = () => {
      stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
      if (stick.current) {
        seen.current = count.current;
        setUnseen(0);
      }
    };
    el.addEventListener("scroll", f, { passive: true });
    return () => el.removeEventListener("scroll", f);
  }, [ref.current]);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    if (items.length < seen.current) seen.current = items.length; // another thread
    if (stick.current) {
      el.scrollTop = el.scrollHeight;
      seen.current = items.length;
      setUnseen(0);
    } else setUnseen(items.length - seen.current);
  }, [items]);
  const follow = () => {
    stick.current = true;
    seen.current = count.current;
    setUnseen(0);
    const el = ref.current;
    if (el) el.scrollTop = el.scrollHeight;
  };
  // hold stops following the end: the person is shown something above it (a search hit).
  const hold = () => {
    stick.current = false;
  };
  return { ref, unseen, follow, hold };
}

// useEscToStop stops the running turn on Esc anywhere on the page.
export function useEscToStop(store: Store, active: boolean) {
  useEffect(() => {
    if (!active) return;
    const f = (e: KeyboardEvent) => {
      if (e.key === "Escape" && !e.defaultPrevented) store.stop();
    };
    window.addEventListener("keydown", f);
    return () => window.removeEventListener("keydown", f);
  }, [active]);
}

export function installNotifications(store: Store) {
  store.notify = (title, body, tag) => {
    if (document.visibilityState !== "hidden" || !notificationsOn()) return;
    try {
      new Notification("parley: " + title, { body, tag: "parley-" + (tag ?? "card") });
    } catch {
      /* some browsers only allow notifications from a service worker */
    }
  };
}

export function notificationsOn(): boolean {
  return typeof Notification !== "undefined" && Notification.permission === "granted";
}

export const statusText: Record<string, string> = {
  ready: "ready",
  idle: "idle",
  working: "working",
  waiting_permission: "waiting for permission",
  waiting_answer: "waiting for an answer",
  unloaded: "unloaded",
  crashed: "crashed",
  no_agent: "agent not configured",
  offline: "machine offline",
};

// machineOf names the machine of a thread at a cluster's hub: a node's thread
// says its node; the hub's own says nothing (nothing changes on one machine).
export const machineOf = (t: { node?: string }) => (t.node ? t.node + " · " : "");

export function ago(ts?: string): string {
  if (!ts) return "";
  const s = (Date.now() - Date.parse(ts)) / 1000;
  if (!isFinite(s)) return "";
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(ts).toLocaleDateString();
}

// threadState is what the side list says of a thread: "waiting for …" while the
// server reports an open card in it (every thread, from the thread list), else
// its state. For the thread on screen the socket is fresher than the list.
export function threadState(store: Store, t: Thread, openKind: string): string {
  const away = awayMachine(store, t.node);
  if (away) return awayState(away);
  const c = store.state.chat;
  const onScreen = t.id === c.thread?.id && c.caughtUp;
  const waiting = onScreen ? openKind : t.waiting;
  if (waiting === "permission") return "waiting for permission";
  if (waiting === "question") return "waiting for an answer";
  if (onScreen) {
    if (c.turnActive) return "working";
    if (t.state === "working") return "idle"; // the list is older than the socket
  }
  return statusText[t.state] ?? t.state;
}

// agentState is the agent program's status as the server reports it, or what
// its threads wait for or do now. A thread that crashed is that thread's state,
// not the program's: the next message starts the agent again.
export function agentState(store: Store, a: AgentInfo, openKind: string): string {
  const server = a.status;
  const here = store.state.node;
  const mine = store.state.threads.filter((t) => t.agent === a.id && (t.node || here) === (a.node || here));
  const states = mine.map((t) => threadState(store, t, openKind));
  for (const s of ["waiting for permission", "waiting for an answer", "working"]) if (states.includes(s)) return s;
  return statusText[server] ?? server;
}

export const stateClass = (s: string) => "st-" + s.replace(/^waiting for (an |)/, "waiting_").replace(/ /g, "_");
