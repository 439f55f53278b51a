// The terminal view of a claude-tmux thread: its pane, live and read-only
// (GET /api/threads/{id}/terminal, server-sent events), drawn by xterm.js;
// typing only once switched on, each key sent literally around the lane.

import { useEffect, useRef, useState } from "preact/hooks";
import type { Terminal as XTerm } from "@xterm/xterm";
import type { Thread } from "../protocol";

type Screen = { text: string; cols: number; rows: number; cursor_x: number; cursor_y: number };

// frame is what xterm is given for a screen: home, clear, the rows (tmux ends
// each with "\n"; the last one must not scroll), the cursor where tmux has it.
export function frame(s: Screen): string {
  const rows = s.text.replace(/\n$/, "").split("\n");
  return "\x1b[0m\x1b[H\x1b[2J" + rows.join("\x1b[0m\r\n") + `\x1b[0m\x1b[${s.cursor_y + 1};${s.cursor_x + 1}H`;
}

// events reads a text/event-stream body, calling on for each event.
async function events(body: ReadableStream<Uint8Array>, on: (event: string, data: string) => void) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let end: number;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let ev = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) ev = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) on(ev, data);
    }
  }
}

export function TerminalView({ thread }: { thread: Thread }) {
  const box = useRef<HTMLDivElement>(null);
  const term = useRef<XTerm | null>(null);
  const [state, setState] = useState<{ live: boolean; note: string }>({ live: false, note: "Connecting…" });
  const [typing, setTyping] = useState(false);
  const [typeErr, setTypeErr] = useState("");
  const [gen, setGen] = useState(0);
  const typingRef = useRef(false);
  typingRef.current = typing;
  const base = `/api/threads/${encodeURIComponent(thread.id)}/terminal`;

  useEffect(() => {
    const ctl = new AbortController();
    let t: XTerm | undefined;
    let sending = Promise.resolve();
    (async () => {
      const { Terminal } = await import("@xterm/xterm");
      await import("@xterm/xterm/css/xterm.css");
      if (ctl.signal.aborted || !box.current) return;
      t = new Terminal({ disableStdin: true, cursorBlink: false, scrollback: 0, fontSize: 13, convertEol: false, screenReaderMode: false });
      t.open(box.current);
      term.current = t;
      t.onData((data) => {
        if (!typingRef.current) return;
        // One key after another, in order: each POST waits for the one before.
        sending = sending
          .then(async () => {
            const r = await fetch(base + "/keys", { method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ text: data }) });
            if (!r.ok) setTypeErr((await r.json().catch(() => ({})))?.error?.message ?? `typing failed: ${r.status}`);
            else setTypeErr("");
          })
          .catch((e: Error) => setTypeErr("typing failed: " + e.message));
      });
      const r = await fetch(base, { credentials: "same-origin", signal: ctl.signal });
      if (!r.ok || !r.body) {
        const v = await r.json().catch(() => ({}));
        setState({ live: false, note: v?.error?.message ?? `the terminal is not available (${r.status})` });
        return;
      }
      setState({ live: true, note: "" });
      await events(r.body, (ev, data) => {
        const v = JSON.parse(data);
        if (ev === "screen") {
          const s = v as Screen;
          if (t!.cols !== s.cols || t!.rows !== s.rows) t!.resize(s.cols, s.rows);
          t!.write(frame(s));
        } else if (ev === "gone") setState({ live: false, note: `The terminal ended: ${v.message}` });
      });
      setState((st) => (st.live ? { live: false, note: "The connection to the terminal ended." } : st));
    })().catch((e: Error) => {
      if (!ctl.signal.aborted) setState({ live: false, note: e.message });
    });
    return () => {
      ctl.abort();
      t?.dispose();
      term.current = null;
    };
  }, [thread.id, gen]);

  const toggle = () => {
    const on = !typing;
    setTyping(on);
    if (term.current) {
      term.current.options.disableStdin = !on;
      if (on) term.current.focus();
    }
  };
  return (
    <section class="terminal-view" aria-label="Terminal">
      <div class="row term-bar">
        <span class="hint" role="status" data-term-state={state.live ? "live" : "off"}>
          {state.live ? "Live view of the agent's terminal" : state.note}
        </span>
        {!state.live && state.note !== "Connecting…" && (
          <button type="button" onClick={() => { setState({ live: false, note: "Connecting…" }); setGen((g) => g + 1); }}>Reconnect</button>
        )}
        <button type="button" aria-pressed={typing} onClick={toggle} data-typing={typing ? "on" : "off"}>
          {typing ? "Stop typing" : "Type into the terminal"}
        </button>
      </div>
      {typing && (
        <div class="banner warn" role="alert" data-typing-warning="">
          Keys you type now go straight to the agent's terminal: they bypass parley's queue and receipts, and the thread does not record them.
        </div>
      )}
      {typeErr && <div class="banner" role="alert">{typeErr}</div>}
      <div class="term-scroll">
        <div class="term-box" ref={box} role="region" aria-label={`Terminal of ${thread.title || thread.id}`} data-terminal={thread.id} />
      </div>
    </section>
  );
}
