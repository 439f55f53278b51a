// Which view of a thread shows: the chat, its changes, its files or its
// terminal. It lives in the address (#/c/<chat>?tab=files&path=src/a.go), so
// a link opens it, Back returns, and a reload keeps it.

import { useEffect, useState } from "preact/hooks";
import type { AgentInfo, Thread } from "../protocol";

export type Tab = "chat" | "changes" | "files" | "terminal";
const tabs: Tab[] = ["chat", "changes", "files", "terminal"];

export type TabRoute = { tab: Tab; path: string };

function parse(hash: string): TabRoute {
  const q = new URLSearchParams(/\?([^#]*)$/.exec(hash)?.[1] ?? "");
  const t = q.get("tab") as Tab | null;
  return { tab: t && tabs.includes(t) ? t : "chat", path: q.get("path") ?? "" };
}

// useTab follows the address's tab and path.
export function useTab(): TabRoute {
  const [r, setR] = useState(() => parse(location.hash));
  useEffect(() => {
    const f = () => setR(parse(location.hash));
    window.addEventListener("hashchange", f);
    return () => window.removeEventListener("hashchange", f);
  }, []);
  return r;
}

// tabHref is the address of this chat's tab (and path in it).
export function tabHref(tab: Tab, path?: string): string {
  const base = location.hash.replace(/\?.*$/, "");
  const q = new URLSearchParams();
  if (tab !== "chat") q.set("tab", tab);
  if (path) q.set("path", path);
  const s = q.toString();
  return base + (s ? "?" + s : "");
}

export function openTab(tab: Tab, path?: string) {
  location.hash = tabHref(tab, path);
}

// tabsOf lists the views a thread has: a terminal only for a tmux agent's
// thread. At a cluster's hub a node's thread's agent is that node's (its
// files and terminal are read on the node).
export function tabsOf(t: Thread | undefined, agents: AgentInfo[], here?: string): Tab[] {
  if (!t?.id) return ["chat"];
  const node = t.node && t.node !== here ? t.node : "";
  const a = agents.find((x) => x.id === t.agent && (node ? x.node === node : !x.node || x.node === here));
  return a?.transport === "tmux" ? ["chat", "changes", "files", "terminal"] : ["chat", "changes", "files"];
}

// relativeTo makes a path the files view can open: relative to the thread's
// directory; "" when an absolute path lies outside it.
export function relativeTo(cwd: string, path: string): string | undefined {
  if (!path.startsWith("/")) return path;
  const base = cwd.replace(/\/+$/, "");
  if (path === base) return "";
  return path.startsWith(base + "/") ? path.slice(base.length + 1) : undefined;
}
