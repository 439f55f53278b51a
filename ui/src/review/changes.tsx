// The Changes view: the thread's whole change (GET /api/threads/{id}/changes),
// a comment on any line of it, and commit, push and pull request.

import { useEffect, useState } from "preact/hooks";
import type { Store } from "../store";
import type { Thread } from "../protocol";
import { highlight } from "../markdown";
import { langOf } from "../chat/items";
import { parsePatch, lineFor, hunkText, type FilePatch, type Hunk } from "./patch";
import { tabHref } from "./tab";

type ChangedFile = { path: string; old_path?: string; status: string; additions: number; deletions: number; binary: boolean; large: boolean };
type Changes = {
  base: string;
  head: string;
  branch: string;
  upstream?: string;
  dir?: string;
  ahead: number;
  behind: number;
  files: ChangedFile[];
  patch: string;
  offset?: number;
  next_offset?: number;
  more: boolean;
};
type Sent = { message_id: string; state?: string; detail?: string };

const api = (t: Thread, what: string) => `/api/threads/${encodeURIComponent(t.id)}/${what}`;
const short = (sha: string) => sha.slice(0, 8);

export function ChangesView({ store, thread }: { store: Store; thread: Thread }) {
  const [ch, setCh] = useState<Changes | null>(null);
  const [err, setErr] = useState("");
  const [only, setOnly] = useState(""); // one file's diff, or "" for all
  const [loading, setLoading] = useState(false);
  const [gen, setGen] = useState(0); // bumped to load again
  const load = (offset = 0) => {
    setLoading(true);
    const q = new URLSearchParams();
    if (only) q.set("path", only);
    if (offset) q.set("offset", String(offset));
    const s = q.toString();
    return store.call<Changes>("GET", api(thread, "changes") + (s ? "?" + s : "")).then(
      (v) => {
        setErr("");
        setCh((old) => (offset && old ? { ...v, patch: old.patch + v.patch } : v));
      },
      (e: Error) => setErr(e.message),
    ).finally(() => setLoading(false));
  };
  useEffect(() => {
    setCh(null);
    void load();
  }, [thread.id, only, gen]);
  return (
    <section class="changes" aria-label="Changes" data-changes="">
      <div class="changes-head">
        {ch && (
          <div class="hint" data-branch={ch.branch}>
            {ch.branch ? <>on <b>{ch.branch}</b></> : "detached HEAD"}
            {ch.upstream ? ` · ${ch.upstream}` : ""} · <span data-ahead={ch.ahead}>{ch.ahead} ahead</span>, <span data-behind={ch.behind}>{ch.behind} behind</span>
            {ch.base && ` · since ${short(ch.base)}`}
          </div>
        )}
        <button type="button" onClick={() => setGen((g) => g + 1)} disabled={loading} aria-label="Refresh the changes">
          {loading ? "Loading…" : "Refresh"}
        </button>
      </div>
      {err && <div class="banner" role="alert" data-changes-error="">{err}</div>}
      <Ship store={store} thread={thread} onDone={() => setGen((g) => g + 1)} />
      {ch && (
        <>
          {!only && <FileList files={ch.files} onPick={setOnly} />}
          {only && (
            <button type="button" class="link" onClick={() => setOnly("")}>
              ← All changed files
            </button>
          )}
          {ch.files.length === 0 && <p class="hint" data-no-changes="">No changes since the thread started.</p>}
          <PatchView store={store} thread={thread} files={ch.files} patch={ch.patch} dir={ch.dir} />
          {ch.more && (
            <button type="button" onClick={() => load(ch.next_offset ?? 0)} disabled={loading} data-more="">
              Show more of the diff
            </button>
          )}
        </>
      )}
    </section>
  );
}

function FileList({ files, onPick }: { files: ChangedFile[]; onPick: (p: string) => void }) {
  if (files.length === 0) return null;
  return (
    <ul class="changed-files" aria-label="Changed files">
      {files.map((f) => (
        <li key={f.path} data-changed={f.path} data-status={f.status}>
          <button type="button" class="link" onClick={() => onPick(f.path)} aria-label={`Show the diff of ${f.path}`}>
            {f.old_path ? `${f.old_path} → ` : ""}
            {f.path}
          </button>
          <span class="hint">{f.status}</span>
          {f.binary ? <span class="hint">binary</span> : (
            <span class="counts">
              <span class="c-add">+{f.additions}</span> <span class="c-del">−{f.deletions}</span>
            </span>
          )}
        </li>
      ))}
    </ul>
  );
}

function PatchView({ store, thread, files, patch, dir }: { store: Store; thread: Thread; files: ChangedFile[]; patch: string; dir?: string }) {
  const parsed = parsePatch(patch);
  return (
    <div class="patch">
      {parsed.map((fp, i) => (
        <FileDiff key={fp.path + i} store={store} thread={thread} fp={fp} info={files.find((f) => f.path === fp.path)} dir={dir} />
      ))}
    </div>
  );
}

// inThread is a changed file's path (from the repository's top) as the Files
// view names it (from the thread's folder, dir), or undefined outside it.
function inThread(path: string, dir?: string): string | undefined {
  if (!dir) return path;
  return path.startsWith(dir + "/") ? path.slice(dir.length + 1) : undefined;
}

function FileDiff({ store, thread, fp, info, dir }: { store: Store; thread: Thread; fp: FilePatch; info?: ChangedFile; dir?: string }) {
  const [open, setOpen] = useState(!info?.large);
  const lang = langOf(fp.path);
  return (
    <div class="diff file-diff" data-diff={fp.path}>
      <div class="diff-path">
        {inThread(fp.path, dir) !== undefined
          ? <a href={tabHref("files", inThread(fp.path, dir))} title="Open the file" aria-label={`Open ${fp.path} in Files`}>{fp.path}</a>
          : <span title="outside the thread's folder">{fp.path}</span>}
        {info && !info.binary && <span class="diff-count">+{info.additions} −{info.deletions}</span>}
        {info?.binary && <span class="diff-count">binary</span>}
      </div>
      {fp.meta.filter((m) => !/^(index |diff )/.test(m)).map((m, i) => <div key={i} class="hint diff-meta">{m}</div>)}
      {!open ? (
        <button type="button" class="link" onClick={() => setOpen(true)} data-large="">
          Large diff ({(info?.additions ?? 0) + (info?.deletions ?? 0)} lines): show it
        </button>
      ) : (
        fp.hunks.map((h, i) => <HunkView key={i} store={store} thread={thread} path={fp.path} h={h} lang={lang} />)
      )}
    </div>
  );
}

function HunkView({ store, thread, path, h, lang }: { store: Store; thread: Thread; path: string; h: Hunk; lang: string }) {
  const [at, setAt] = useState(-1); // the line whose comment box is open
  return (
    <div class="hunk">
      <div class="hunk-head">{h.header}</div>
      <pre class="hljs">
        {h.lines.map((l, i) => (
          <div key={i}>
            <div class={`dl d-${l.op === "meta" ? "same" : l.op}`} data-new={l.new} data-old={l.old}>
              <span class="ln" aria-hidden="true">{l.old ?? ""}</span>
              <span class="ln" aria-hidden="true">{l.new ?? ""}</span>
              {l.op === "meta" ? <span class="hint">{l.text}</span> : (
                <button type="button" class="comment-at" aria-label={`Comment on ${path}:${lineFor(h, i)}`} onClick={() => setAt(at === i ? -1 : i)}>
                  {l.op === "add" ? "+" : l.op === "del" ? "-" : " "}
                </button>
              )}
              {l.op !== "meta" && <span dangerouslySetInnerHTML={{ __html: highlight(l.text, lang) }} />}
            </div>
            {at === i && <CommentBox store={store} thread={thread} path={path} line={lineFor(h, i)} hunk={hunkText(h)} onClose={() => setAt(-1)} />}
          </div>
        ))}
      </pre>
    </div>
  );
}

function CommentBox({ store, thread, path, line, hunk, onClose }: { store: Store; thread: Thread; path: string; line: number; hunk: string; onClose: () => void }) {
  const [text, setText] = useState("");
  const [sent, setSent] = useState<Sent | null>(null);
  const [err, setErr] = useState("");
  const [busy, setBusy] = useState(false);
  const receipt = sent ? store.state.chat.receipts[sent.message_id] : undefined;
  const send = () => {
    setBusy(true);
    setErr("");
    store.call<Sent>("POST", api(thread, "comment"), { path, line, hunk, text }).then(setSent, (e: Error) => setErr(e.message)).finally(() => setBusy(false));
  };
  return (
    <form class="comment-box" data-comment-box={`${path}:${line}`} onSubmit={(e) => { e.preventDefault(); send(); }}>
      <label class="hint" for={`c-${path}-${line}`}>Comment on {path}:{line}, sent to the agent</label>
      <textarea id={`c-${path}-${line}`} rows={3} value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} aria-label={`Comment on ${path}:${line}`} disabled={!!sent} />
      <div class="row">
        {!sent && <button type="submit" class="primary" disabled={busy || !text.trim()}>Send comment</button>}
        <button type="button" onClick={onClose}>{sent ? "Close" : "Cancel"}</button>
        {sent && (
          <span role="status" data-comment-sent={sent.message_id}>
            Sent to the agent: {receipt?.state ?? sent.state ?? "queued"}. <a href={tabHref("chat")}>See it in the chat</a>
          </span>
        )}
      </div>
      {err && <div class="banner" role="alert">{err}</div>}
    </form>
  );
}

// Ship is Commit (a message typed, or asked of the agent), Push and Open PR,
// each with its result or its error, said once it is known.
function Ship({ store, thread, onDone }: { store: Store; thread: Thread; onDone: () => void }) {
  const [msg, setMsg] = useState("");
  const [busy, setBusy] = useState("");
  const [result, setResult] = useState<{ ok: boolean; text: string; url?: string } | null>(null);
  const act = (what: string, body: unknown, say: (v: any) => { text: string; url?: string }) => {
    setBusy(what);
    setResult(null);
    store.call<any>("POST", api(thread, what), body).then(
      (v) => {
        setResult({ ok: true, ...say(v) });
        onDone();
      },
      (e: Error) => setResult({ ok: false, text: e.message }),
    ).finally(() => setBusy(""));
  };
  return (
    <div class="ship" role="group" aria-label="Commit, push and pull request">
      <form class="row" onSubmit={(e) => { e.preventDefault(); act("commit", { message: msg }, (v) => ({ text: `Committed ${short(v.commit ?? "")} on ${v.branch ?? "?"}${v.summary ? ": " + v.summary : ""}` })); }}>
        <input type="text" aria-label="Commit message" placeholder="Commit message" value={msg} onInput={(e) => setMsg((e.target as HTMLInputElement).value)} />
        <button type="submit" class="primary" disabled={!!busy || !msg.trim()}>{busy === "commit" ? "Committing…" : "Commit"}</button>
        <button type="button" disabled={!!busy} onClick={() => act("commit", { ask_agent: true }, (v) => ({ text: `Asked the agent to commit (${v.state ?? "sent"}): see the chat` }))}>
          Ask the agent to commit
        </button>
        <button type="button" disabled={!!busy} onClick={() => act("push", {}, (v) => ({ text: `Pushed ${v.branch ?? ""} to ${v.remote ?? "the remote"}` }))}>
          {busy === "push" ? "Pushing…" : "Push"}
        </button>
        <button type="button" disabled={!!busy} onClick={() => act("pr", {}, (v) => ({ text: v.created ? "Pull request opened:" : "Open the pull request here:", url: v.url }))}>
          {busy === "pr" ? "Opening…" : "Open PR"}
        </button>
      </form>
      {result && (
        <div class={result.ok ? "ship-ok" : "banner"} role={result.ok ? "status" : "alert"} data-ship-result={result.ok ? "ok" : "error"}>
          {result.text}
          {result.url && <> <a href={result.url} target="_blank" rel="noopener noreferrer">{result.url}</a></>}
        </div>
      )}
    </div>
  );
}
