// The files view: the thread's directory, read-only (GET /api/threads/{id}/files).

import { useEffect, useState } from "preact/hooks";
import type { Store } from "../store";
import type { Thread } from "../protocol";
import { highlight } from "../markdown";
import { langOf } from "../chat/items";
import { relativeTo, tabHref } from "./tab";

type Entry = { name: string; kind: "dir" | "file" | "link"; size: number };
type View = {
  path: string;
  kind: "dir" | "file";
  entries?: Entry[];
  more?: boolean;
  size?: number;
  text?: string;
  binary?: boolean;
  image?: string;
  too_large?: boolean;
  limit?: number;
};

export function filesURL(thread: string, path: string, extra = "") {
  return `/api/threads/${encodeURIComponent(thread)}/files?path=${encodeURIComponent(path)}${extra}`;
}

export function size(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1 << 20)).toFixed(1)} MB`;
}

const join = (dir: string, name: string) => (dir ? dir + "/" + name : name);
const parent = (p: string) => p.replace(/\/?[^/]*$/, "");

export function Files({ store, thread, path: asked }: { store: Store; thread: Thread; path: string }) {
  const path = relativeTo(thread.cwd, asked);
  const [all, setAll] = useState(false);
  const [view, setView] = useState<View | null>(null);
  const [err, setErr] = useState("");
  useEffect(() => {
    if (path === undefined) return;
    let live = true;
    setErr("");
    store.call<View>("GET", filesURL(thread.id, path, all ? "&all=1" : "")).then(
      (v) => live && setView(v),
      (e: Error) => live && (setView(null), setErr(e.message)),
    );
    return () => {
      live = false;
    };
  }, [thread.id, path, all]);
  if (path === undefined) return <div class="banner" role="alert">{asked} is outside the thread's directory ({thread.cwd}).</div>;
  const crumbs = path ? path.split("/") : [];
  return (
    <section class="files-view" aria-label="Files" data-files-path={path}>
      <div class="files-bar">
        <nav class="crumbs" aria-label="Path">
          <a href={tabHref("files")} data-crumb="">{thread.cwd.split("/").pop() || thread.cwd}</a>
          {crumbs.map((c, i) => (
            <span key={i}>
              {" / "}
              <a href={tabHref("files", crumbs.slice(0, i + 1).join("/"))}>{c}</a>
            </span>
          ))}
        </nav>
        <label class="hint">
          <input type="checkbox" checked={all} onChange={(e) => setAll((e.target as HTMLInputElement).checked)} /> Show files git ignores
        </label>
      </div>
      {err && <div class="banner" role="alert" data-files-error="">{err}</div>}
      {view && view.path === path && <FileBody thread={thread} view={view} />}
    </section>
  );
}

function FileBody({ thread, view }: { thread: Thread; view: View }) {
  if (view.kind === "dir")
    return (
      <ul class="file-list" aria-label={`Files in ${view.path || thread.cwd}`}>
        {view.path && (
          <li>
            <a href={tabHref("files", parent(view.path))} aria-label="Up one folder">..</a>
          </li>
        )}
        {view.entries?.map((e) => (
          <li key={e.name} data-entry={e.name} data-kind={e.kind}>
            <a href={tabHref("files", join(view.path, e.name))}>
              {e.name}
              {e.kind === "dir" ? "/" : e.kind === "link" ? " →" : ""}
            </a>
            {e.kind === "file" && <span class="hint">{size(e.size)}</span>}
          </li>
        ))}
        {view.entries?.length === 0 && <li class="hint">Empty folder.</li>}
        {view.more && <li class="hint">More entries are not listed.</li>}
      </ul>
    );
  const name = view.path.split("/").pop() ?? view.path;
  if (view.image && !view.too_large) return <img class="file-image" src={filesURL(thread.id, view.path, "&raw=1")} alt={name} />;
  if (view.too_large)
    return <p class="hint" data-file-summary="">{name} is too large to show ({size(view.size ?? 0)}; at most {size(view.limit ?? 0)}).</p>;
  if (view.binary || view.text === undefined)
    return <p class="hint" data-file-summary="">{name} is a binary file ({size(view.size ?? 0)}): not shown.</p>;
  const lines = highlightLines(view.text, langOf(view.path));
  return (
    <pre class="hljs file-text" aria-label={`Content of ${name}`} data-file={view.path}>
      {lines.map((l, i) => (
        <div key={i} class="fl">
          <span class="ln" aria-hidden="true">{i + 1}</span>
          <span dangerouslySetInnerHTML={{ __html: l }} />
        </div>
      ))}
    </pre>
  );
}

// highlightLines highlights each line alone, so a line number sits beside
// each (a construct across lines, a block comment say, loses its colour).
export function highlightLines(text: string, lang: string): string[] {
  const lines = text.replace(/\n$/, "").split("\n");
  return lines.map((l) => highlight(l, lang));
}
