// The phone layout: the list and the chat are separate views, targets are large,
// and the composer stays above the on-screen keyboard.

import { useEffect } from "preact/hooks";
import { Plugins } from "../chat/plugins";
import { LiveAgents } from "../chat/live";
import { Sessions } from "../chat/sessions";
import type { Store } from "../store";
import { threadLabel } from "../store";
import { agentState, machineOf, stateClass, threadState, ago, nav, useEscToStop, useStickToBottom, type Route } from "../app";
import { Account, ModeSelects } from "../chat/controls";
import { Offline } from "../chat/devices";
import { Conversation, JumpToLatest, Starting, openCardKind } from "../chat/items";
import { useComposer } from "../chat/composer";
import { AttachButton, Attachments } from "../chat/attach";
import { VoiceButton } from "../chat/voice";
import { NewThread } from "../chat/newthread";
import { Banner, OfflineNote } from "../chat/banner";
import { ThreadTotals } from "../chat/usageview";
import { Away } from "../chat/away";
import { KeptChat, KeptList } from "../chat/kept";
import { ArchivedToggle, FromCopy, Gone, MoveThread, SearchBox, SearchHits, ThreadActions, useFocus } from "../chat/threads";
import { ReviewPane, ThreadTabs, shownTab } from "../review/Review";
import { useTab } from "../review/tab";

// useKeyboardInset follows the visual viewport, so the composer sits above the keyboard.
function useKeyboardInset() {
  useEffect(() => {
    const vv = window.visualViewport;
    if (!vv) return;
    const f = () => document.documentElement.style.setProperty("--vvh", `${vv.height}px`);
    f();
    vv.addEventListener("resize", f);
    return () => vv.removeEventListener("resize", f);
  }, []);
}

export function Phone({ store, route }: { store: Store; route: Route }) {
  useKeyboardInset();
  const s = store.state;
  const openKind = openCardKind(s.chat.items);
  if (route.view === "chat") return <PhoneChat store={store} />;
  if (route.view === "new")
    return (
      <div class="phone">
        <header class="p-bar">
          <button type="button" class="back" onClick={nav.home} aria-label="Back to threads">‹</button>
          <h1>New thread</h1>
        </header>
        <Banner store={store} />
        <div class="p-body pad">
          <NewThread store={store} agents={s.agents} defaultAgent={s.defaultAgent} onStart={(a, cwd, text, node, worktree) => nav.start(store, a, cwd, text, node, worktree)} onResume={(a, id, cwd) => nav.resume(store, a, id, cwd)} />
        </div>
      </div>
    );
  return (
    <div class="phone">
      <header class="p-bar">
        <h1>parley</h1>
        <button type="button" class="primary" onClick={nav.newThread}>New</button>
      </header>
      <Offline />
      <Banner store={store} />
      <div class="p-body">
        <OfflineNote store={store} />
        <KeptList store={store} />
        <ul class="p-agents" aria-label="Agents">
          {s.agents.map((a) => (
            <li key={(a.node ?? "") + "/" + a.id} data-agent={a.id} data-machine={a.node}>
              <span class={`dot ${stateClass(agentState(store, a, openKind))}`} aria-hidden="true" />
              {a.name || a.id}{a.node && a.node !== s.node && <span class="hint"> on {a.node}</span>} <span class="hint">{agentState(store, a, openKind)}</span>
            </li>
          ))}
        </ul>
        <Plugins store={store} />
        <LiveAgents store={store} />
        <Sessions store={store} />
        <div class="pad"><SearchBox store={store} /></div>
        {s.search.q.trim() ? <SearchHits store={store} itemClass="p-thread" /> : <ul class="p-threads" aria-label="Threads">
          {s.threads.map((t) => {
            const unread = (t.last_seq ?? 0) > (s.seen[t.id] ?? 0);
            return (
              <li key={t.id}>
                <button type="button" class="p-thread" data-thread={t.id} data-machine={t.node} onClick={() => nav.thread(store, t)}>
                  <span class="t-title">
                    {unread && <span class="unread" aria-label="unread" />}
                    {threadLabel(t)}
                  </span>
                  <span class="t-meta">{machineOf(t)}{t.agent} · {threadState(store, t, openKind)} · {ago(t.updated_at)}</span>
                  <span class="t-cwd">{t.cwd}</span>
                </button>
              </li>
            );
          })}
          {s.threads.length === 0 && <li class="hint pad">No threads yet. Start one with New.</li>}
        </ul>}
        <div class="pad"><ArchivedToggle store={store} itemClass="p-thread" /></div>
      </div>
      <Account store={store} />
    </div>
  );
}

function PhoneChat({ store }: { store: Store }) {
  const c = store.state.chat;
  const log = useStickToBottom<HTMLDivElement>(c.items);
  const comp = useComposer(store, c.commands, c.turnActive, log.follow);
  useEscToStop(store, c.turnActive);
  useFocus(store, log.hold);
  const r = useTab();
  const tab = shownTab(store, r);
  return (
    <div class="phone p-chat">
      <header class="p-bar">
        <button type="button" class="back" onClick={nav.home} aria-label="Back to threads">‹</button>
        <div class="p-title">
          <h1 data-thread-title="">{c.thread ? threadLabel(c.thread) : "Chat"}</h1>
          {c.thread && <div class="hint" data-thread-where="">{machineOf(c.thread)}{c.thread.agent} · {c.thread.cwd}</div>}
          {c.thread && <ThreadTotals totals={c.totals} />}
        </div>
        {c.turnActive && (
          <button type="button" class="stop" onClick={() => store.stop()} disabled={c.stopping}>{c.stopping ? "Stopping…" : "Stop"}</button>
        )}
      </header>
      {c.thread && (
        <details class="p-manage">
          <summary>Manage thread</summary>
          <ThreadActions store={store} thread={c.thread} />
        </details>
      )}
      <Banner store={store} />
      <Gone store={store} />
      <Away store={store} />
      <KeptChat store={store} />
      <FromCopy store={store} />
      {store.state.unsaved && <div class="banner" role="alert" data-unsaved="">{store.state.unsaved}</div>}
      {c.thread && <MoveThread store={store} thread={c.thread} />}
      {c.starting && <div class="p-starting"><Starting since={c.starting} /></div>}
      <ThreadTabs store={store} tab={tab} />
      <ReviewPane store={store} tab={tab} path={r.path} />
      <div class="scroll-wrap" hidden={tab !== "chat"}>
        <div class="p-body scroll" ref={log.ref}>
          <Conversation store={store} items={c.items} receipts={c.receipts} queued={c.queued} />
        </div>
        <JumpToLatest unseen={log.unseen} onJump={log.follow} />
      </div>
      {c.mode && <div class="p-modes" hidden={tab !== "chat"}><ModeSelects store={store} /></div>}
      {comp.suggestions.length > 0 && (
        <ul class="suggest p-suggest" role="listbox" aria-label="Commands">
          {comp.suggestions.map((cmd, i) => (
            <li key={cmd.name} role="option" aria-selected={i === comp.sel} onClick={() => comp.complete(cmd)}>
              <b>/{cmd.name.replace(/^\//, "")}</b> <span class="hint">{cmd.description}</span>
            </li>
          ))}
        </ul>
      )}
      <form class="p-composer" hidden={tab !== "chat"} onSubmit={(e) => { e.preventDefault(); comp.send(); }} onDrop={comp.onDrop} onDragOver={comp.onDragOver}>
        <Attachments comp={comp} />
        <AttachButton comp={comp} />
        <VoiceButton comp={comp} />
        <textarea aria-label="Message" placeholder="Message" rows={1} value={comp.text} onInput={(e) => comp.onInput((e.target as HTMLTextAreaElement).value)} onKeyDown={comp.onKeyDown}
          onPaste={comp.onPaste} />
        <button type="submit" class="primary" disabled={!comp.canSend}>Send</button>
      </form>
    </div>
  );
}
