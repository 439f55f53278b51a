// The chat socket client: typed events mirroring internal/chat/payload.go, one
// connection per chat view, reconnect with backoff and `since`, dedupe by seq.

export type RouteKey = { channel: string; chat: string };

// PluginStatus is one IM plugin as GET /api/plugins reports it.
export type PluginStatus = { id: string; state: string; restarts: number; last_error?: string; since?: string };

export type AgentInfo = {
  id: string;
  name: string;
  transport: string;
  status: string;
  roots?: string[];
  // The machine it runs on, at a cluster's hub (absent on a single machine).
  node?: string;
};

// NodeStatus is one joined machine as GET /api/nodes (and `parley nodes`) lists it.
export type NodeStatus = {
  name: string;
  online: boolean;
  joined: string;
  version?: string;
  agents?: string[];
  threads: number;
  since?: string;
  last_seen?: string;
};

export type Thread = {
  id: string;
  agent: string;
  cwd: string;
  session_id: string;
  title: string;
  state: string;
  mode?: string;
  // The machine that owns it, at a cluster's hub (absent for the hub's own).
  node?: string;
  created_at?: string;
  updated_at?: string;
  last_seq?: number;
  // Hidden from the default list (still readable); a message brings it back.
  archived?: boolean;
  // The thread's own git worktree, when it was made with one (docs/protocol.md).
  worktree?: string;
  git_base?: string;
  // From the thread list (GET /api/threads): the newest open card, if any.
  waiting?: "permission" | "question";
  card?: { request_id: string; kind: "permission" | "question"; title?: string };
};

// SearchHit is one place GET /api/search matched: a title (seq 0), a person's
// message (its seq) or an answer (the seq of its first chunk).
export type SearchHit = { thread: string; seq: number; kind: "title" | "user" | "agent"; snippet: string; title: string; archived?: boolean };
// Unsearched is a machine a search at a cluster's hub did not cover, and why
// ("offline", "no answer within 5s", an error).
export type Unsearched = { node: string; reason: string };

export type PermissionOption = { id: string; label: string; kind: string };
export type QuestionOption = { label: string; description?: string };
export type QuestionItem = {
  question: string;
  header?: string;
  multi_select: boolean;
  options: QuestionOption[];
};
export type Diff = { path: string; old_text?: string; new_text: string; exists?: boolean; unshown?: string };
export type Location = { path: string; line?: number };
export type PlanEntry = { content: string; priority?: string; status: string };
export type ModeOption = { id: string; name: string; description?: string };
export type ConfigOption = { id: string; name: string; current: string; values?: ModeOption[] };
export type Command = { name: string; description?: string; hint?: string };
export type Answers = Record<string, string | string[]>;

// Fields every thread-log event carries.
type Logged = { thread?: string; seq?: number; ts?: string };

export type ServerEvent = Logged &
  (
    | { type: "config"; chat: string; channel?: string; agents: AgentInfo[]; default_agent: string; version: string; limits?: { max_message_bytes?: number } }
    | { type: "thread"; thread: Thread }
    | { type: "replay_done"; last_seq: number; from_copy?: boolean; offline_since?: string }
    | { type: "history_pruned"; through_seq: number }
    | { type: "pong" }
    | { type: "user_message"; message_id: string; text: string; from: RouteKey; files?: FileRef[]; origin?: Origin }
    | { type: "delivery"; message_id: string; state: DeliveryState; detail?: string }
    | { type: "agent_chunk"; text: string; message_id?: string }
    // Provisional text (a terminal agent's screen): no seq, never in the log;
    // it belongs right after the event after_seq and replaces the last one.
    | { type: "agent_draft"; text: string; after_seq: number; id?: number; extends?: number }
    | { type: "thought_chunk"; text: string }
    | { type: "tool_call"; tool_call_id: string; title: string; kind: string; status: string; input?: unknown; locations?: Location[] }
    | { type: "tool_call_update"; tool_call_id: string; status?: string; title?: string; output?: string; diffs?: Diff[]; locations?: Location[] }
    | { type: "plan"; entries: PlanEntry[] }
    | { type: "permission_request"; request_id: string; tool: { name: string; title: string; input?: unknown; tool_call_id?: string }; options: PermissionOption[]; diffs?: Diff[]; restated?: boolean; elsewhere?: string }
    | { type: "permission_resolved"; request_id: string; option_id?: string; message?: string; cancelled?: boolean; by?: RouteKey; rule?: string; reason?: string }
    | { type: "question"; request_id: string; questions: QuestionItem[]; restated?: boolean }
    | { type: "question_resolved"; request_id: string; answers?: Answers; response?: string; cancelled?: boolean; by?: RouteKey }
    | { type: "mode"; current: string; available?: ModeOption[]; config_options?: ConfigOption[] }
    | { type: "commands"; commands: Command[] }
    | { type: "usage"; input_tokens?: number; output_tokens?: number; cost_usd?: number; context_tokens?: number; context_window?: number }
    | { type: "turn_status"; active: boolean; message_id?: string; stopping?: boolean }
    | { type: "prompt_done"; stop_reason: string; message_id?: string; cost_usd?: number }
    | { type: "error"; code: string; message: string; ref?: string }
    | { type: "session"; state: string; session_id?: string; detail?: string; command?: string }
    | { type: "thread_info"; title: string; archived: boolean; agent?: string; moved_from?: string; context_messages?: number }
    // A note for the person: the agent's notify_person, or parley notify ("cli").
    | { type: "notice"; text: string; level: "info" | "done" | "error"; from: "agent" | "cli" }
    // Answers this connection's edit_thread or delete_thread (never logged).
    | { type: "done"; ref?: string; note?: string }
  );

export type DeliveryState = "queued" | "delivering" | "submitted" | "failed" | "unknown";

// An image attached to a message: data is base64.
export type ImageData = { mime_type: string; data: string };

// A file attached to a message (data is base64): saved in the thread's
// working directory and named by path in the message.
export type FileData = { name: string; mime_type?: string; data: string };

// What sent a message no person typed: a schedule or a trigger.
export type Origin = { kind: "schedule" | "trigger"; id: string; name?: string };

// A file as saved, in a user_message.
export type FileRef = { name: string; path: string; mime_type?: string; size: number };

export type Intent =
  | { new: { cwd: string; agent: string; node?: string; worktree?: boolean } }
  | { resume: { agent: string; session_id: string; cwd: string } };

export type ClientInput =
  | { type: "message"; message_id: string; text: string; intent?: Intent; agent?: string; mode?: string; images?: ImageData[]; files?: FileData[] }
  | { type: "stop" }
  | { type: "hand_back" }
  | { type: "withdraw"; message_id: string }
  | { type: "permission_response"; request_id: string; option_id?: string; cancelled?: boolean; message?: string }
  | { type: "question_answer"; request_id: string; answers: Answers; response?: string }
  | { type: "set_mode"; mode_id: string }
  | { type: "set_config_option"; config_id: string; value: string }
  | { type: "resume_session"; agent: string; session_id: string; cwd: string; node?: string; watch?: boolean }
  | { type: "open_thread"; thread_id: string }
  | { type: "edit_thread"; ref: string; thread_id: string; title?: string; archived?: boolean; agent?: string; context_messages?: number }
  | { type: "delete_thread"; ref: string; thread_id: string; remove_worktree?: boolean; force?: boolean }
  | { type: "ping" };

export type ConnState = "connecting" | "online" | "offline";

// Handlers the socket reports to (the store).
export interface SocketSink {
  // A new (never seen) event, in order. `replaying` is true before replay_done.
  event(ev: ServerEvent, replaying: boolean): void;
  // A card request seen again on this connection (replayed or re-sent as open).
  cardSeen(requestId: string): void;
  // replay_done arrived: the set of cards seen as open since connecting is complete.
  caughtUp(): void;
  conn(s: ConnState, detail?: string): void;
}

export type SocketOptions = {
  chat?: string;
  channel?: string;
  url?: (q: URLSearchParams) => string;
  // Backoff bounds in milliseconds.
  minDelay?: number;
  maxDelay?: number;
};

// newID makes a client id; crypto.getRandomValues works outside secure contexts too.
export function newID(prefix: string): string {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return prefix + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

export function wsURL(q: URLSearchParams): string {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  return `${proto}//${location.host}/ws/chat?${q.toString()}`;
}

// ChatSocket keeps one route's connection alive. It never hands the sink an event
// twice: thread-log events are dropped unless their seq is past the last one held.
export class ChatSocket {
  private ws: WebSocket | null = null;
  private closed = false;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  private lastPong = 0;
  private replaying = true;
  // seq held per thread: the dedupe record and the `since` of the next connect.
  private held = new Map<string, number>();
  private current = "";
  chat: string;
  private readonly opts: SocketOptions;

  constructor(private readonly sink: SocketSink, opts: SocketOptions = {}) {
    this.opts = opts;
    this.chat = opts.chat ?? "";
    this.onWake = this.onWake.bind(this);
  }

  start(): void {
    window.addEventListener("online", this.onWake);
    document.addEventListener("visibilitychange", this.onWake);
    this.open();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    clearInterval(this.pingTimer);
    window.removeEventListener("online", this.onWake);
    document.removeEventListener("visibilitychange", this.onWake);
    this.ws?.close();
    this.ws = null;
  }

  get isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN && !this.replaying;
  }

  // send delivers an input if the socket is up and caught up; false means "not sent".
  send(input: ClientInput): boolean {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN || this.replaying) return false;
    this.ws.send(JSON.stringify(input));
    return true;
  }

  // onWake reconnects at once when the machine wakes or the network returns.
  private onWake(): void {
    if (this.closed || document.visibilityState === "hidden") return;
    if (!this.ws || this.ws.readyState === WebSocket.CLOSED) {
      clearTimeout(this.timer);
      this.attempt = 0;
      this.open();
    } else if (this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(JSON.stringify({ type: "ping" }));
    }
  }

  private open(): void {
    if (this.closed) return;
    const q = new URLSearchParams();
    if (this.chat) q.set("chat", this.chat);
    q.set("channel", this.opts.channel ?? "web");
    q.set("drafts", "append"); // a draft that only grew comes as what it adds (fold.ts)
    const since = this.current ? this.held.get(this.current) : undefined;
    if (since) {
      q.set("since", String(since));
      q.set("thread", this.current); // the thread `since` belongs to
    }
    this.replaying = true;
    this.sink.conn("connecting");
    let ws: WebSocket;
    try {
      ws = new WebSocket((this.opts.url ?? wsURL)(q));
    } catch (e) {
      this.retry(String(e));
      return;
    }
    this.ws = ws;
    ws.onmessage = (m) => this.onFrame(m.data);
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.ws = null;
      clearInterval(this.pingTimer);
      this.retry(e.reason || (e.code === 1006 ? "connection lost" : `closed (${e.code})`));
    };
    ws.onopen = () => {
      this.lastPong = Date.now();
      clearInterval(this.pingTimer);
      // A dead link shows no close event until TCP gives up: ping and time out ourselves.
      this.pingTimer = setInterval(() => {
        if (ws.readyState !== WebSocket.OPEN) return;
        if (Date.now() - this.lastPong > 45_000) {
          ws.close(4000, "no answer from the server");
          return;
        }
        ws.send(JSON.stringify({ type: "ping" }));
      }, 15_000);
    };
  }

  private retry(detail: string): void {
    if (this.closed) return;
    this.sink.conn("offline", detail);
    const min = this.opts.minDelay ?? 300;
    const max = this.opts.maxDelay ?? 10_000;
    const d = Math.min(max, min * 2 ** this.attempt) * (0.75 + Math.random() * 0.5);
    this.attempt++;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.open(), d);
  }

  private onFrame(data: unknown): void {
    if (typeof data !== "string") return;
    let ev: ServerEvent;
    try {
      ev = JSON.parse(data);
    } catch {
      return;
    }
    if (!ev || typeof ev.type !== "string") return;
    this.lastPong = Date.now();
    switch (ev.type) {
      case "config":
        if (ev.chat) this.chat = ev.chat;
        break;
      case "thread":
        if (ev.thread.id !== this.current) {
          // The route shows another thread: the store starts its view afresh, and so does the dedupe.
          this.held.delete(ev.thread.id);
          this.current = ev.thread.id;
        }
        break;
      case "replay_done":
        this.replaying = false;
        this.attempt = 0;
        this.sink.event(ev, false);
        this.sink.caughtUp();
        this.sink.conn("online");
        return;
      case "pong":
        return;
      case "permission_request":
      case "question":
        this.sink.cardSeen(ev.request_id);
        break;
    }
    if (ev.type === "agent_draft" && (!ev.thread || ev.after_seq !== (this.held.get(ev.thread) ?? 0))) {
      return; // overtaken: a later event (its final words, maybe) is shown
    }
    if (ev.seq && ev.thread) {
      const have = this.held.get(ev.thread) ?? 0;
      if (ev.seq <= have) return; // already shown
      if (have > 0 && ev.seq > have + 1 && !this.replaying) {
        // A gap means something was missed: reconnect and replay from what we hold.
        this.ws?.close(4001, "gap in the event log");
        return;
      }
      this.held.set(ev.thread, ev.seq);
    }
    this.sink.event(ev, this.replaying);
  }
}
