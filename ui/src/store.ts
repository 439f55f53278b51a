// The one store both layouts read: agents, threads, the current chat folded from
// its events into a conversation, cards with their server state, and receipts.
// Card state comes from the server alone: a card is open only while the server says so.

import { dropFiles, getFiles, putFiles } from "./filestore";
import { AgentInfo, NodeStatus, PluginStatus, Answers, ChatSocket, ClientInput, ConnState, FileData, Intent, SearchHit, ServerEvent, SocketSink, Thread, Unsearched, newID } from "./protocol";

import { Fold, type ChatView } from "./fold";
import { keepLog, keepThreads, keptLog, keptThreads } from "./offline";
import type { UsageTotals } from "./chat/usage";
export type { CardState, Item, Receipt } from "./fold";

// The chat on screen: its route, its thread, and the conversation folded from its events.
export type Chat = ChatView & {
  chat: string;
  thread?: Thread;
  caughtUp: boolean;
  // The thread's usage totals (GET /api/threads/{id}), fetched when it is shown
  // and after each turn.
  totals?: UsageTotals;
  // The person's message a search hit opened the thread at (its message id).
  focus?: string;
  // Why the chat shows no thread any more (its thread was deleted).
  gone?: string;
  // At a hub, when the thread's machine is away: since when (RFC 3339, "" when
  // unknown); the conversation shown is the hub's copy. Cleared when the
  // machine's own events come again.
  fromCopy?: string;
  // While parley is away: the conversation shown is this device's copy
  // (offline.ts), saved at this time (RFC 3339); read-only.
  kept?: string;
};

// Search is the thread search: what was typed, what it found, or why not.
// unsearched: the machines a hub's search did not cover, so that hits never
// look complete when they are not.
export type Search = { q: string; hits: SearchHit[]; unsearched: Unsearched[]; error?: string; busy: boolean };

export type State = {
  conn: ConnState;
  connDetail?: string;
  // Whether this page was ever connected: only a reconnect shows the banner.
  everOnline: boolean;
  agents: AgentInfo[];
  // Whether the agent list was fetched once: an empty list means no agent, not "loading".
  agentsLoaded: boolean;
  // IM plugins and their state (none when no [[plugin]] is configured).
  plugins: PluginStatus[];
  defaultAgent: string;
  // This machine's name when it is a cluster's hub ("" otherwise).
  node: string;
  // At a cluster's hub, the joined machines (GET /api/nodes), read with the
  // lists: a thread on a machine that is away says so (chat/away.tsx).
  machines: NodeStatus[];
  // The thread list is this device's copy (offline.ts): parley was not reached.
  keptList: boolean;
  version: string;
  // limits.max_message_bytes, from the config event (0 until it came).
  maxMessageBytes: number;
  threads: Thread[];
  // The archived threads, while the person looks at them (null: hidden).
  archived: Thread[] | null;
  search: Search;
  // Why messages not yet sent would not survive this page closing ("" when
  // they would): the browser refused to keep them.
  unsaved: string;
  // Last seq seen per thread, for unread markers.
  seen: Record<string, number>;
  chat: Chat;
  authFailed: boolean;
};

// An outbox entry. In localStorage its files are left out (has_files says
// there are some): they are kept in IndexedDB (filestore.ts).
type Outgoing = { message_id: string; text: string; intent?: Intent; chat: string; files?: FileData[]; has_files?: boolean };

const OUTBOX = "parley.outbox";
const SEEN = "parley.seen";
const CHATS = "parley.chats"; // thread id → chat id, so a thread reopens on its route

function load<T>(k: string, d: T): T {
  try {
    const v = localStorage.getItem(k);
    return v ? (JSON.parse(v) as T) : d;
  } catch {
    return d;
  }
}
function save(k: string, v: unknown): boolean {
  try {
    localStorage.setItem(k, JSON.stringify(v));
    return true;
  } catch {
    return false; // storage full or disabled
  }
}

function emptyChat(chat: string): Chat {
  return { chat, items: [], queued: [], receipts: {}, turnActive: false, commands: [], caughtUp: false };
}

export type Fetcher = (path: string, init?: RequestInit) => Promise<Response>;

export class Store implements SocketSink {
  state: State;
  private listeners = new Set<() => void>();
  private scheduled = false;
  private socket: ChatSocket | null = null;
  private outbox: Outgoing[] = load<Outgoing[]>(OUTBOX, []);
  private openSeen = new Set<string>();
  // The current thread's log as received, for folding again with earlier events.
  private log: ServerEvent[] = [];
  // The conversation, folded from the log (src/fold.ts).
  private fold = new Fold({ ack: (id) => this.ack(id), announce: (id, title, body, replaying) => this.announce(id, title, body, replaying) });
  private seenTimer: ReturnType<typeof setTimeout> | undefined;
  private holding = false;
  private lastProbe = 0;
  // Files of messages sent from this page, for a retry of one the server
  // never got (one it got keeps them saved, named in its text).
  private sentFiles = new Map<string, FileData[]>();
  // The thread the route should show once connected: one of parley's threads (by id)
  // or an agent's native session (by session id).
  private pendingOpen: Thread | null = null;
  private onUnauthorized: () => void;
  // Cards already announced (or open before this page loaded): one notification each.
  private announced = new Set<string>();
  private listLoaded = false;
  // The new-thread intent of messages sent from this page, for a retry: a first
  // message that failed must start its thread again, with its agent and directory.
  private sentIntents = new Map<string, Intent>();
  notify: (title: string, body: string, tag?: string) => void = () => {};
  // Timings of the last open (ms since page start), for the benchmarks.
  timing = { open: 0, first: 0, caughtUp: 0 };

  // The search a hit opened a thread at: focused once its log is here.
  private wantFocus: { thread: string; seq: number } | null = null;
  private searchTimer: ReturnType<typeof setTimeout> | undefined;
  private searchSeq = 0;
  // Thread edits and deletes sent on the socket, by ref, waiting for their
  // done or error (a delete of the thread shown: for the socket's close).
  private pending = new Map<string, { resolve: () => void; reject: (e: Error) => void; deletes?: string }>();

  constructor(private readonly fetcher: Fetcher = (p, init) => fetch(p, { credentials: "same-origin", ...init }), onUnauthorized?: () => void) {
    this.onUnauthorized = onUnauthorized ?? (() => {});
    queueMicrotask(() => this.restoreFiles());
    this.state = {
      conn: "connecting",
      everOnline: false,
      agents: [],
      agentsLoaded: false,
      plugins: [],
      defaultAgent: "",
      node: "",
      machines: [],
      keptList: false,
      version: "",
      maxMessageBytes: 0,
      threads: [],
      archived: null,
      search: { q: "", hits: [], unsearched: [], busy: false },
      unsaved: "",
      seen: load(SEEN, {}),
      chat: emptyChat(""),
      authFailed: false,
    };
  }

  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  // set replaces state and tells listeners once per frame: replays of thousands of
  // events render once, not thousands of times.
  private set(patch: Partial<State>) {
    this.state = { ...this.state, ...patch };
    // While a replay streams in, draw nothing: one render when it is done.
    if (this.scheduled || (this.holding && !("conn" in patch))) return;
    this.scheduled = true;
    // One render per frame: each socket frame is its own task, so a microtask would
    // render once per event. The timeout covers tabs that get no animation frames.
    const flush = () => {
      if (!this.scheduled) return;
      this.scheduled = false;
      clearTimeout(timer);
      for (const l of this.listeners) l();
    };
    const timer = setTimeout(flush, 100);
    requestAnimationFrame(flush);
  }

  private setChat(patch: Partial<Chat>) {
    this.set({ chat: { ...this.state.chat, ...patch } });
  }

  // folded shows what the fold holds now.
  private folded() {
    this.setChat(this.fold.view);
  }

  // open connects the store to one route (chat id). thread, when given, is the thread
  // the person asked for: the route is bound to it once connected.
  open(chat: string | undefined, thread?: Thread) {
    this.socket?.close();
    this.fold.reset();
    this.openSeen.clear();
    this.pendingOpen = thread ?? null;
    this.log = [];
    this.timing = { open: performance.now(), first: 0, caughtUp: 0 };
    this.holding = true;
    this.set({ chat: emptyChat(chat ?? "") });
    this.showOutbox();
    this.socket = new ChatSocket(this, { chat });
    this.socket.start();
  }

  // showOutbox shows this chat's unacknowledged messages as "sending".
  private showOutbox() {
    const chat = this.state.chat.chat;
    for (const o of this.outbox) {
      if (o.chat !== chat || this.fold.has("u:" + o.message_id)) continue;
      this.fold.user({ kind: "user", key: "u:" + o.message_id, message_id: o.message_id, text: o.text });
      this.fold.receipt(o.message_id, { state: "sending" });
    }
    this.folded();
  }

  // hasEarlier reports whether the log holds events before the ones shown.
  get hasEarlier(): boolean {
    return (this.log[0]?.seq ?? 1) > 1;
  }

  // loadEarlier fetches the thread's earlier events and folds the whole log again.
  async loadEarlier() {
    const t = this.state.chat.thread;
    const first = this.log[0]?.seq ?? 1;
    if (!t || first <= 1) return;
    const v = await this.getJSON<{ events: ServerEvent[] }>(`/api/threads/${encodeURIComponent(t.id)}/events?since=0&limit=${Math.min(first - 1, 10000)}`);
    if (this.state.chat.thread?.id !== t.id || (this.log[0]?.seq ?? 1) !== first) return;
    const earlier = (v.events ?? []).filter((e) => (e.seq ?? 0) < first);
    this.refold(earlier.concat(this.log));
  }

  private refold(log: ServerEvent[]) {
    const closed = [...this.fold.closedCards];
    this.fold.reset();
    this.log = [];
    for (const ev of log) this.event(ev, true);
    for (const id of closed) {
      this.fold.closedCards.add(id);
      this.fold.patchCard(id, { state: "closed" });
    }
    this.showOutbox();
  }

  close() {
    this.socket?.close();
    this.socket = null;
  }

  get chatID(): string {
    return this.socket?.chat ?? this.state.chat.chat;
  }

  // ---- REST ----

  // refresh reloads agents and threads. Calls made while one runs coalesce into
  // one more run after it, so answers never land out of order and a burst of
  // change events costs two fetches, not one each.
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        await this.load();
      } while (this.refreshAgain);
    })().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;

  private async load() {
    try {
      const [a, t] = await Promise.all([this.getJSON<AgentInfo[] | { agents: AgentInfo[] }>("/api/agents"), this.getJSON<Thread[] | { threads: Thread[] }>("/api/threads")]);
      const agents = Array.isArray(a) ? a : a.agents ?? [];
      const def = Array.isArray(a) ? "" : (a as { default_agent?: string }).default_agent ?? "";
      const node = Array.isArray(a) ? "" : (a as { node?: string }).node ?? "";
      const threads = (Array.isArray(t) ? t : t.threads ?? []).slice();
      threads.sort((x, y) => (y.updated_at ?? "").localeCompare(x.updated_at ?? ""));
      this.set({ agents, agentsLoaded: true, threads, node, keptList: false, defaultAgent: this.state.defaultAgent || def });
      void keepThreads(threads);
      // The thread on screen takes its title from the list: a new thread's
      // title comes with its first message, after the socket named the thread.
      const shown = this.state.chat.thread;
      const listed = shown && threads.find((t) => t.id === shown.id);
      if (shown && listed && listed.title !== shown.title) this.setChat({ thread: { ...shown, title: listed.title } });
      this.announceCards(threads);
      if (node) this.getJSON<{ nodes: NodeStatus[] }>("/api/nodes").then((n) => this.set({ machines: n.nodes ?? [] }), () => {});
      if (this.state.archived) {
        const v = await this.getJSON<{ threads: Thread[] }>("/api/threads?archived=1");
        this.set({ archived: v.threads ?? [] });
      }
      // Plugins come from another channel; a daemon without them answers 404.
      this.getJSON<{ plugins: PluginStatus[] }>("/api/plugins").then((p) => this.set({ plugins: p.plugins ?? [] }), () => {});
    } catch (e) {
      if (e instanceof Unauthorized) return;
      if (!this.state.threads.length) void this.showKeptList();
      /* the socket banner already says when the server is away */
    }
  }

  // announceCards notifies about cards the thread list shows newly open in other
  // threads (the chat on screen announces its own from the socket). Cards open
  // when the page loaded are not news.
  private announceCards(threads: Thread[]) {
    const shown = this.state.chat.thread?.id;
    for (const t of threads) {
      if (!t.card || t.id === shown || this.announced.has(t.card.request_id)) continue;
      this.announced.add(t.card.request_id);
      if (this.listLoaded) this.notify(t.card.kind === "permission" ? "Permission needed" : "Question", `${threadLabel(t)}: ${t.card.title ?? ""}`, t.card.request_id);
    }
    this.listLoaded = true;
  }

  // announce notifies about a card once; a replayed card is not news.
  private announce(requestID: string, title: string, body: string, quiet: boolean) {
    if (this.announced.has(requestID)) return;
    this.announced.add(requestID);
    if (!quiet) this.notify(title, body, requestID);
  }

  async getJSON<T>(path: string): Promise<T> {
    const r = await this.fetcher(path);
    if (r.status === 401) {
      this.set({ authFailed: true });
      this.onUnauthorized();
      throw new Unauthorized();
    }
    if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    return (await r.json()) as T;
  }

  // call makes a REST call that changes something; a refusal throws an Error
  // with the server's words.
  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const r = await this.fetcher(path, { method, ...(body !== undefined ? { body: JSON.stringify(body), headers: { "Content-Type": "application/json" } } : {}) });
    if (r.status === 401) {
      this.set({ authFailed: true });
      this.onUnauthorized();
      throw new Unauthorized();
    }
    const v = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(v?.error?.message ?? `${r.status}`);
    return v as T;
  }

  // ---- managing threads ----
  // Rename, archive, move and delete go on the socket (edit_thread,
  // delete_thread), the path parley chat takes too; thread_info tells every tab.

  async renameThread(id: string, title: string) {
    await this.request({ type: "edit_thread", ref: newID("r_"), thread_id: id, title });
    this.threadEdited(id, { title: title.trim() });
  }

  async archiveThread(id: string, archived: boolean) {
    await this.request({ type: "edit_thread", ref: newID("r_"), thread_id: id, archived });
    this.threadEdited(id, { archived });
  }

  // moveThread gives a thread whose agent is gone to another agent; context is
  // how many of its last messages go to the new agent with the next message.
  async moveThread(id: string, agent: string, context: number) {
    await this.request({ type: "edit_thread", ref: newID("r_"), thread_id: id, agent, ...(context > 0 ? { context_messages: context } : {}) });
    this.threadEdited(id, { agent, state: "unloaded" });
  }

  // deleteThread deletes a thread; the server closes every socket showing it,
  // saying why (see conn): for the thread shown, that close is the answer.
  async deleteThread(id: string) {
    await this.request({ type: "delete_thread", ref: newID("r_"), thread_id: id }, id);
    this.set({ threads: this.state.threads.filter((t) => t.id !== id), archived: this.state.archived?.filter((t) => t.id !== id) ?? null });
    if (this.state.chat.thread?.id === id) this.threadGone("This thread was deleted.");
  }

  // request sends a thread edit or delete and waits for its answer.
  private request(i: ClientInput & { ref: string }, deletes?: string): Promise<void> {
    return new Promise((resolve, reject) => {
      if (!this.input(i)) {
        reject(new Error("Not connected to parley: try again once the page is back online."));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(i.ref);
        reject(new Error("parley did not answer in 20 s: check the thread before trying again."));
      }, 20000);
      const end = () => { clearTimeout(timer); this.pending.delete(i.ref); };
      this.pending.set(i.ref, { resolve: () => { end(); resolve(); }, reject: (e) => { end(); reject(e); }, deletes });
    });
  }

  private threadEdited(id: string, change: Partial<Thread>) {
    if (this.state.chat.thread?.id === id) this.setChat({ thread: { ...this.state.chat.thread, ...change } });
    void this.refresh();
  }

  // threadGone empties the chat whose thread was deleted and says so.
  private threadGone(why: string) {
    this.fold.reset();
    this.log = [];
    this.setChat({ ...emptyChat(this.state.chat.chat), caughtUp: this.state.chat.caughtUp, gone: why });
    void this.refresh();
  }

  showArchived(on: boolean) {
    this.set({ archived: on ? [] : null });
    if (on) void this.refresh();
  }

  // search asks the server once typing pauses; an answer to an older search is dropped.
  search(q: string) {
    clearTimeout(this.searchTimer);
    const n = ++this.searchSeq; // an answer to an earlier search, still on its way, is dropped
    if (!q.trim()) {
      this.set({ search: { q, hits: [], unsearched: [], busy: false } });
      return;
    }
    this.set({ search: { ...this.state.search, q, busy: true } });
    this.searchTimer = setTimeout(async () => {
      let next: Search;
      try {
        const v = await this.call<{ hits: SearchHit[]; unsearched?: Unsearched[] }>("GET", `/api/search?q=${encodeURIComponent(q)}`);
        next = { q, hits: v.hits ?? [], unsearched: v.unsearched ?? [], busy: false };
      } catch (e) {
        if (e instanceof Unauthorized) return;
        next = { q, hits: [], unsearched: [], busy: false, error: (e as Error).message };
      }
      if (n === this.searchSeq) this.set({ search: next });
    }, 200);
  }

  // wantHit remembers the message a hit matched, for when its thread opens.
  wantHit(hit: SearchHit) {
    this.wantFocus = hit.seq > 0 ? { thread: hit.thread, seq: hit.seq } : null;
  }

  // focusHit, once the hit's thread is shown and its log is here (at the
  // replay's end, which a switch to it has too), names the
  // person's message to show: the one matched, or the one an answer answered.
  private async focusHit() {
    const w = this.wantFocus;
    const t = this.state.chat.thread;
    if (!w || !t || t.id !== w.thread) return;
    this.wantFocus = null;
    if ((this.log[0]?.seq ?? 1) > w.seq) await this.loadEarlier();
    let id: string | undefined;
    for (const ev of this.log) {
      if ((ev.seq ?? 0) > w.seq) break;
      if (ev.type === "user_message") id = ev.message_id;
    }
    if (id) this.setChat({ focus: id });
  }

  chatFor(thread: string): string | undefined {
    return load<Record<string, string>>(CHATS, {})[thread];
  }

  private rememberChat(thread: string, chat: string) {
    const m = load<Record<string, string>>(CHATS, {});
    if (m[thread] === chat) return;
    m[thread] = chat;
    save(CHATS, m);
  }

  // ---- inputs ----

  // sendMessage shows the message at once as "sending" and keeps it in an outbox
  // (in localStorage) until the server acknowledges it, so nothing typed is lost.
  sendMessage(text: string, intent?: Intent, files?: FileData[]): string {
    const id = newID("m_");
    this.enqueue({ message_id: id, text, intent, chat: this.chatID, ...(files?.length ? { files } : {}) });
    return id;
  }

  // retry sends a failed message again with the same message id.
  retry(messageID: string) {
    const it = this.fold.item("u:" + messageID);
    if (!it || it.kind !== "user") return;
    const kept = this.sentFiles.get(messageID);
    const intent = this.sentIntents.get(messageID);
    this.enqueue({ message_id: messageID, text: it.text, chat: this.chatID, ...(intent ? { intent } : {}), ...(kept ? { files: kept } : {}) });
  }

  private enqueue(o: Outgoing) {
    if (o.files) this.sentFiles.set(o.message_id, o.files);
    if (o.intent) this.sentIntents.set(o.message_id, o.intent);
    if (o.files) o.has_files = true;
    this.outbox = this.outbox.filter((x) => x.message_id !== o.message_id).concat(o);
    this.saveOutbox();
    if (o.files) {
      putFiles(o.message_id, o.files).catch((e: Error) =>
        this.set({ unsaved: `The files attached to a message not yet sent could not be kept in this browser (${e.message}): they are lost if this page closes before it is sent.` }));
    }
    const shown = o.files?.map((f) => ({ name: f.name, mime_type: f.mime_type, url: f.mime_type?.startsWith("image/") ? `data:${f.mime_type};base64,${f.data}` : undefined }));
    this.fold.user({ kind: "user", key: "u:" + o.message_id, message_id: o.message_id, text: o.text, ...(shown ? { files: shown } : {}) });
    this.fold.receipt(o.message_id, { state: "sending" });
    this.folded();
    this.flush();
  }

  // flush sends every outbox entry of this chat; entries stay until acknowledged.
  private flush() {
    if (!this.socket?.isOpen) return;
    for (const o of this.outbox) {
      if (o.chat && o.chat !== this.chatID) continue;
      if (o.has_files && !o.files) continue; // its files are still being read back
      this.socket.send({ type: "message", message_id: o.message_id, text: o.text, ...(o.intent ? { intent: o.intent } : {}), ...(o.files ? { files: o.files } : {}) });
    }
  }

  private ack(messageID: string) {
    const o = this.outbox.find((x) => x.message_id === messageID);
    if (!o) return;
    this.outbox = this.outbox.filter((x) => x.message_id !== messageID);
    this.saveOutbox();
    if (o.has_files) void dropFiles(messageID);
  }

  // saveOutbox keeps the outbox's text in localStorage (files are in
  // IndexedDB); a refusal is said, never silent.
  private saveOutbox() {
    const ok = save(OUTBOX, this.outbox.map(({ files: _files, ...o }) => o));
    const why = "Messages not yet sent could not be kept in this browser (its storage is full or off): they are lost if this page closes before they are sent.";
    if (!ok) this.set({ unsaved: why });
    else if (this.state.unsaved === why) this.set({ unsaved: "" });
  }

  // restoreFiles gives outbox entries kept by an earlier page their files
  // back from IndexedDB, then sends them.
  private restoreFiles() {
    for (const o of this.outbox) {
      // Kept whole in localStorage by an older page: its files move to IndexedDB.
      if (o.files && !o.has_files) {
        o.has_files = true;
        void putFiles(o.message_id, o.files).then(() => this.saveOutbox(), () => {});
      }
    }
    const want = this.outbox.filter((o) => o.has_files && !o.files);
    if (!want.length) return;
    void Promise.all(want.map((o) => getFiles(o.message_id).then((f) => { if (f) o.files = f; }, () => {}))).then(() => this.flush());
  }

  // loadTotals fetches the shown thread's usage totals.
  loadTotals() {
    const id = this.state.chat.thread?.id;
    if (!id) return;
    this.getJSON<{ usage?: UsageTotals }>(`/api/threads/${encodeURIComponent(id)}`).then((v) => {
      if (v.usage && this.state.chat.thread?.id === id) this.setChat({ totals: v.usage });
    }, () => {});
  }

  input(i: ClientInput): boolean {
    return this.socket?.send(i) ?? false;
  }

  // withdraw asks the server to take a queued message back before its turn; its
  // receipt then says failed, withdrawn (or an error says it is being delivered).
  withdraw(messageID: string) {
    this.input({ type: "withdraw", message_id: messageID });
  }

  stop() {
    if (this.input({ type: "stop" }) && this.state.chat.turnActive) {
      this.fold.stopping();
      this.folded();
    }
  }

  // handBack asks for "Continue in a terminal": parley's agent ends after the
  // turn and a session handed_back event brings the command (an item).
  handBack(): boolean {
    return this.input({ type: "hand_back" });
  }

  answerPermission(requestID: string, optionID: string) {
    if (!this.cardOpen(requestID)) return;
    if (this.input({ type: "permission_response", request_id: requestID, option_id: optionID })) {
      this.fold.patchCard(requestID, { state: "answering", chosen: optionID });
      this.folded();
    }
  }

  answerQuestion(requestID: string, answers: Answers, response?: string) {
    if (!this.cardOpen(requestID)) return;
    if (this.input({ type: "question_answer", request_id: requestID, answers, ...(response ? { response } : {}) })) {
      this.fold.patchCard(requestID, { state: "answering", answers });
      this.folded();
    }
  }

  private cardOpen(requestID: string): boolean {
    const it = this.fold.item("c:" + requestID);
    return !!it && (it.kind === "permission" || it.kind === "question") && it.state === "open";
  }

  markSeen(thread: string, seq: number) {
    if ((this.state.seen[thread] ?? 0) >= seq) return;
    const seen = { ...this.state.seen, [thread]: seq };
    this.set({ seen });
    // Persist lazily: a replay marks thousands of events seen in a row.
    clearTimeout(this.seenTimer);
    this.seenTimer = setTimeout(() => save(SEEN, this.state.seen), 500);
  }

  // ---- SocketSink ----

  conn(s: ConnState, detail?: string) {
    if (s === "offline" && detail === DELETED) {
      // A delete of the thread shown was answered by the close itself.
      for (const p of [...this.pending.values()]) if (p.deletes && p.deletes === this.state.chat.thread?.id) p.resolve();
    }
    if (s === "offline" && detail === DELETED && this.state.chat.thread) {
      // Deleted here or elsewhere: the server closed the socket saying so.
      this.threadGone("This thread was deleted.");
    }
    if (s === "online" && this.state.chat.kept) {
      // parley is back: its replay replaces the device's copy.
      this.fold.reset();
      this.log = [];
      this.setChat({ ...this.fold.view, kept: undefined });
      this.showOutbox();
    }
    if (s === "offline") {
      this.setChat({ caughtUp: false });
      if (!this.log.length) void this.showKept();
      // A socket refused with 401 looks like any lost connection: ask the REST API,
      // which says 401 plainly and sends the person to the login page.
      if (Date.now() - this.lastProbe > 5000) {
        this.lastProbe = Date.now();
        this.getJSON("/api/version").catch(() => {});
      }
    }
    this.set({ conn: s, connDetail: detail ?? (s === "connecting" ? this.state.connDetail : undefined), everOnline: this.state.everOnline || s === "online" });
  }

  // showKeptList shows this device's copy of the thread list, parley being away.
  private async showKeptList() {
    const ts = await keptThreads();
    if (!ts.length || this.state.threads.length) return;
    this.holding = false; // no replay is coming to end the hold
    this.set({ threads: ts, keptList: true });
  }

  // showKept shows this device's copy of the chat's thread, read-only (its
  // cards closed), while the socket cannot reach parley; the outbox's
  // messages stay shown as waiting to be sent.
  private async showKept() {
    const chat = this.state.chat.chat;
    const id = this.pendingOpen?.id || this.state.chat.thread?.id || Object.entries(load<Record<string, string>>(CHATS, {})).find(([, c]) => c === chat)?.[0];
    if (!id) return;
    const k = await keptLog(id);
    if (!k || this.log.length || this.state.chat.chat !== chat || this.state.conn === "online") return;
    this.holding = false; // no replay is coming to end the hold
    this.refold(k.events);
    this.fold.closeUnseen(new Set());
    this.setChat({ ...this.fold.view, thread: this.state.chat.thread ?? k.thread, kept: k.saved_at });
  }

  // keepSoon saves the shown thread's log to the device's copy once events
  // pause.
  private keepTimer: ReturnType<typeof setTimeout> | undefined;
  private keepSoon() {
    clearTimeout(this.keepTimer);
    this.keepTimer = setTimeout(() => {
      const t = this.state.chat.thread;
      if (t && this.log.length && !this.state.chat.kept) void keepLog(t, this.log);
    }, 1000);
  }

  cardSeen(requestID: string) {
    this.openSeen.add(requestID);
  }

  caughtUp() {
    this.timing.caughtUp = performance.now();
    this.holding = false;
    // Cards shown as open that the server did not send again on this connection are
    // not open any more: never leave a stale card clickable.
    this.fold.closeUnseen(this.openSeen);
    this.openSeen.clear();
    this.setChat({ ...this.fold.view, caughtUp: true });
    this.keepSoon();
    this.loadTotals();
    const p = this.pendingOpen;
    const shown = this.state.chat.thread;
    if (p?.id && shown?.id !== p.id) {
      this.input({ type: "open_thread", thread_id: p.id });
    } else if (p && !p.id && p.session_id && shown?.session_id !== p.session_id) {
      // watch: a session running in a plain terminal, followed read-only (sessions.tsx).
      const watch = (p as Thread & { watch?: boolean }).watch;
      this.input({ type: "resume_session", agent: p.agent, session_id: p.session_id, cwd: p.cwd, ...(p.node ? { node: p.node } : {}), ...(watch ? { watch } : {}) });
    }
    this.pendingOpen = null;
    this.flush();
    void this.refresh();
    void this.focusHit();
  }

  event(ev: ServerEvent, replaying: boolean) {
    if (!this.timing.first) this.timing.first = performance.now();
    if (ev.seq && ev.thread) this.log.push(ev);
    const c = this.state.chat;
    switch (ev.type) {
      case "config":
        this.set({ agents: ev.agents?.length ? mergeAgents(this.state.agents, ev.agents) : this.state.agents, defaultAgent: ev.default_agent, version: ev.version,
          maxMessageBytes: ev.limits?.max_message_bytes || this.state.maxMessageBytes });
        if (ev.chat && ev.chat !== c.chat) {
          // Outbox entries written before the server named this chat belong to it.
          for (const o of this.outbox) if (!o.chat) o.chat = ev.chat;
          this.setChat({ chat: ev.chat });
        }
        return;
      case "thread": {
        const old = c.thread?.id;
        if (old && old !== ev.thread.id) {
          // The route moved to another thread: show that thread's conversation only.
          this.fold.reset();
          this.log = [];
          this.setChat({ ...this.fold.view, mode: undefined, usage: undefined, totals: undefined, starting: undefined, turnSince: undefined, thread: ev.thread });
        } else {
          this.setChat({ thread: ev.thread });
        }
        this.rememberChat(ev.thread.id, this.chatID);
        this.upsertThread(ev.thread);
        if (this.state.chat.gone) this.setChat({ gone: undefined });
        return;
      }
      case "done":
        if (ev.ref) this.pending.get(ev.ref)?.resolve();
        return;
      case "error":
        if (ev.ref && this.pending.has(ev.ref)) {
          this.pending.get(ev.ref)!.reject(new Error(ev.message || ev.code));
          return;
        }
        break;
      case "thread_info":
        // Renamed, (un)archived or moved, here or elsewhere: every tab hears it.
        if (c.thread && c.thread.id === ev.thread) this.setChat({ thread: { ...c.thread, title: ev.title, archived: ev.archived, ...(ev.agent ? { agent: ev.agent } : {}), ...(ev.moved_from ? { state: "unloaded" } : {}) } });
        if (!replaying) void this.refresh();
        break;
      case "session":
        // Handed back, or its agent back from a terminal: the thread's state
        // (its "Continue in a terminal" action) follows live.
        if (!replaying && c.thread && c.thread.id === ev.thread) {
          if (ev.state === "handed_back") this.setChat({ thread: { ...c.thread, state: "handed_back" } });
          else if (c.thread.state === "handed_back" && ev.state !== "exited" && ev.state !== "unloaded") this.setChat({ thread: { ...c.thread, state: "idle" } });
        }
        break;
      case "replay_done":
        this.setChat({ fromCopy: ev.from_copy ? (ev.offline_since ?? "") : undefined });
        return;
    }
    // A live event of the thread: its machine is back.
    if (!replaying && ev.seq && c.fromCopy !== undefined) this.setChat({ fromCopy: undefined });
    this.fold.apply(ev, replaying);
    this.folded();
    if (!replaying && ev.seq) this.keepSoon();
    if (ev.type === "prompt_done" && !replaying) this.loadTotals();
    if (ev.thread && ev.seq && this.state.chat.thread?.id === ev.thread) {
      this.bumpThread(ev.thread, ev.seq, ev.ts);
      if (document.visibilityState === "visible") this.markSeen(ev.thread, ev.seq);
    }
  }

  // ---- the thread list ----

  private upsertThread(t: Thread) {
    const threads = this.state.threads.filter((x) => x.id !== t.id);
    const old = this.state.threads.find((x) => x.id === t.id);
    threads.unshift({ ...old, ...t });
    this.set({ threads });
  }

  private bumpThread(id: string, seq: number, ts?: string) {
    const i = this.state.threads.findIndex((x) => x.id === id);
    if (i < 0) return;
    const t = this.state.threads[i];
    if ((t.last_seq ?? 0) >= seq) return;
    const threads = this.state.threads.slice();
    threads[i] = { ...t, last_seq: seq, updated_at: ts ?? t.updated_at };
    this.set({ threads });
  }
}

class Unauthorized extends Error {}

// DELETED is the reason the server closes a socket whose thread was deleted (hub.ReasonDeleted).
const DELETED = "the thread was deleted";

function mergeAgents(old: AgentInfo[], fresh: AgentInfo[]): AgentInfo[] {
  return fresh.map((a) => ({ ...old.find((o) => o.id === a.id && o.node === a.node), ...a }));
}

export const threadLabel = (t: Thread) => t.title || t.cwd.split("/").filter(Boolean).pop() || t.id;
