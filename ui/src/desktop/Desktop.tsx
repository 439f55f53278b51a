// The desktop layout: agents and threads at the side, the chat beside them.

import type { Store } from "../store";
import { threadLabel } from "../store";
import { agentState, machineOf, stateClass, threadState, ago, nav, useEscToStop, useStickToBottom, type Route } from "../app";
import { Conversation, JumpToLatest, Starting, openCardKind } from "../chat/items";
import { useComposer } from "../chat/composer";
import { AttachButton, Attachments } from "../chat/attach";
import { VoiceButton } from "../chat/voice";
import { NewThread } from "../chat/newthread";
import { Banner, OfflineNote } from "../chat/banner";
import { ThreadTotals } from "../chat/usageview";
import { Away } from "../chat/away";
import { KeptChat, KeptList } from "../chat/kept";
import { Plugins } from "../chat/plugins";
import { LiveAgents } from "../chat/live";
import { Sessions } from "../chat/sessions";
import { Account, ModeSelects } from "../chat/controls";
import { Offline } from "../chat/devices";
import { ArchivedToggle, FromCopy, Gone, MoveThread, SearchBox, SearchHits, ThreadActions, useFocus } from "../chat/threads";
import { ReviewPane, ThreadTabs, shownTab } from "../review/Review";
import { useTab } from "../review/tab";

export function Desktop({ store, route }: { store: Store; route: Route }) {
  const s = store.state;
  const openKind = openCardKind(s.chat.items);
  const c = s.chat;
  const inChat = route.view === "chat";
  useEscToStop(store, inChat && c.turnActive);
  return (
    <div class="desk">
      <aside class="side" aria-label="Agents and threads">
        <div class="side-lists">
          <div class="brand">
            <span>parley</span>
            {s.version && <span class="hint">{s.version}</span>}
          </div>
          <button type="button" class="primary wide" onClick={nav.newThread}>
            New thread
          </button>
          <OfflineNote store={store} />
          <KeptList store={store} />
          <h3>Agents</h3>
          <ul class="agents">
            {s.agents.map((a) => (
              <li key={(a.node ?? "") + "/" + a.id} data-agent={a.id} data-machine={a.node}>
                <span class={`dot ${stateClass(agentState(store, a, openKind))}`} aria-hidden="true" />
                <span class="name">{a.name || a.id}{a.node && a.node !== s.node && <span class="hint"> on {a.node}</span>}</span>
                <span class="hint">{agentState(store, a, openKind)}</span>
              </li>
            ))}
          </ul>
          <Plugins store={store} />
          <LiveAgents store={store} />
          <Sessions store={store} />
          <h3>Threads</h3>
          <SearchBox store={store} />
          {s.search.q.trim() ? <SearchHits store={store} itemClass="thread" /> : <ul class="threads">
            {s.threads.map((t) => {
              const unread = (t.last_seq ?? 0) > (s.seen[t.id] ?? 0) && t.id !== c.thread?.id;
              const cur = inChat && t.id === c.thread?.id;
              return (
                <li key={t.id}>
                  <button type="button" class={`thread${cur ? " current" : ""}`} aria-current={cur ? "page" : undefined} data-thread={t.id} data-machine={t.node} onClick={() => nav.thread(store, t)}>
                    <span class="t-title">
                      {unread && <span class="unread" aria-label="unread" />}
                      {threadLabel(t)}
                    </span>
                    <span class="t-meta">
                      <span class="t-cwd">{t.cwd}</span>
                      <span>{machineOf(t)}{t.agent} · {threadState(store, t, openKind)} · {ago(t.updated_at)}</span>
                    </span>
                  </button>
                </li>
              );
            })}
          </ul>}
          <ArchivedToggle store={store} itemClass="thread" />
        </div>
        <Account store={store} />
      </aside>
      <main class="main">
        <Offline />
        <Banner store={store} />
        {inChat ? <ChatPane store={store} /> : (
          <div class="pad">
            <NewThread store={store} agents={s.agents} defaultAgent={s.defaultAgent} onStart={(a, cwd, text, node, worktree) => nav.start(store, a, cwd, text, node, worktree)} onResume={(a, id, cwd) => nav.resume(store, a, id, cwd)} />
          </div>
        )}
      </main>
    </div>
  );
}

function ChatPane({ store }: { store: Store }) {
  const c = store.state.chat;
  const t = c.thread;
  const log = useStickToBottom<HTMLDivElement>(c.items);
  const comp = useComposer(store, c.commands, c.turnActive, log.follow);
  useFocus(store, log.hold);
  const r = useTab();
  const tab = shownTab(store, r);
  return (
    <section class="chat" aria-label="Chat">
      <header class="chat-head">
        <div>
          <h1 data-thread-title="">{t ? threadLabel(t) : "New chat"}</h1>
          {t && <div class="hint" data-thread-where="">{machineOf(t)}{t.agent} · {t.cwd}</div>}
          {t && <ThreadTotals totals={c.totals} />}
          {t && <ThreadActions store={store} thread={t} />}
        </div>
        <div class="row">
          <ModeSelects store={store} />
          {c.starting ? <Starting since={c.starting} /> : c.turnActive && <span class="working" role="status">{openCardKind(c.items) ? "waiting for you" : "working…"}</span>}
        </div>
      </header>
      <Gone store={store} />
      <Away store={store} />
      <KeptChat store={store} />
      <FromCopy store={store} />
      {store.state.unsaved && <div class="banner" role="alert" data-unsaved="">{store.state.unsaved}</div>}
      {t && <MoveThread store={store} thread={t} />}
      <ThreadTabs store={store} tab={tab} />
      <ReviewPane store={store} tab={tab} path={r.path} />
      <div class="scroll-wrap" hidden={tab !== "chat"}>
        <div class="scroll" ref={log.ref} tabIndex={0} aria-label="Messages">
          <Conversation store={store} items={c.items} receipts={c.receipts} queued={c.queued} />
        </div>
        <JumpToLatest unseen={log.unseen} onJump={log.follow} />
      </div>
      <form class="composer" hidden={tab !== "chat"} onSubmit={(e) => { e.preventDefault(); comp.send(); }} onDrop={comp.onDrop} onDragOver={comp.onDragOver}>
        <Attachments comp={comp} />
        <AttachButton comp={comp} />
        <VoiceButton comp={comp} />
        {comp.suggestions.length > 0 && (
          <ul class="suggest" role="listbox" aria-label="Commands">
            {comp.suggestions.map((cmd, i) => (
              <li key={cmd.name} role="option" aria-selected={i === comp.sel} class={i === comp.sel ? "sel" : ""} onMouseDown={(e) => { e.preventDefault(); comp.complete(cmd); }}>
                <b>/{cmd.name.replace(/^\//, "")}</b> <span class="hint">{cmd.description}</span>
              </li>
            ))}
          </ul>
        )}
        <textarea
          aria-label="Message"
          placeholder={c.commands.length ? "Message (/ for commands)" : "Message"}
          rows={2}
          value={comp.text}
          onInput={(e) => comp.onInput((e.target as HTMLTextAreaElement).value)}
          onKeyDown={comp.onKeyDown}
          onPaste={comp.onPaste}
        />
        {c.turnActive ? (
          <button type="button" class="stop" onClick={() => store.stop()} aria-keyshortcuts="Escape" disabled={c.stopping}>
            {c.stopping ? "Stopping…" : "Stop"}
          </button>
        ) : null}
        <button type="submit" class="primary" disabled={!comp.canSend}>
          Send
        </button>
      </form>
    </section>
  );
}
