// A thread's views beside the chat: the tab bar, and the view a tab shows.

import "./review.css";
import type { Store } from "../store";
import { ChangesView } from "./changes";
import { Files } from "./files";
import { TerminalView } from "./terminal";
import { tabHref, tabsOf, type Tab, type TabRoute } from "./tab";

const label: Record<Tab, string> = { chat: "Chat", changes: "Changes", files: "Files", terminal: "Terminal" };

// shownTab is the tab the address asks for, when the thread has it.
export function shownTab(store: Store, r: TabRoute): Tab {
  const s = store.state;
  return tabsOf(s.chat.thread, s.agents, s.node).includes(r.tab) ? r.tab : "chat";
}

export function ThreadTabs({ store, tab }: { store: Store; tab: Tab }) {
  const s = store.state;
  const tabs = tabsOf(s.chat.thread, s.agents, s.node);
  if (tabs.length < 2) return null;
  return (
    <nav class="thread-tabs" aria-label="Thread views">
      {tabs.map((t) => (
        <a key={t} href={tabHref(t)} aria-current={t === tab ? "page" : undefined} data-tab={t} class={t === tab ? "current" : ""}>
          {label[t]}
        </a>
      ))}
    </nav>
  );
}

// ReviewPane shows a tab other than the chat.
export function ReviewPane({ store, tab, path }: { store: Store; tab: Tab; path: string }) {
  const t = store.state.chat.thread;
  if (!t?.id || tab === "chat") return null;
  return (
    <div class="review" data-review={tab}>
      {tab === "changes" && <ChangesView store={store} thread={t} />}
      {tab === "files" && <Files store={store} thread={t} path={path} />}
      {tab === "terminal" && <TerminalView key={t.id} thread={t} />}
    </div>
  );
}
