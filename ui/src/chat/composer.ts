// The composer's logic (draft, slash-command completion, send, Esc to stop, ↑ to
// recall earlier prompts), shared by both layouts; each layout draws its own box.

import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Command, FileData } from "../protocol";
import type { Store } from "../store";

// The files of one message: at most this many (the server's uploads.MaxFiles).
export const maxFiles = 10;

// fileBudget is what a message's files may weigh together: the daemon's
// limits.max_message_bytes (its config event) less room for the text, or
// the default's (1 MiB) before the event came.
export function fileBudget(maxMessageBytes: number): number {
  const max = maxMessageBytes > 0 ? maxMessageBytes : 1024 * 1024;
  return Math.max(max - 100 * 1024, Math.floor(max / 2));
}

// A file waiting in the composer: url shows an image's thumbnail.
export type Attached = FileData & { size: number; url?: string };

function readFile(f: File): Promise<Attached> {
  return new Promise((done, fail) => {
    const r = new FileReader();
    r.onload = () => {
      const url = String(r.result);
      const image = f.type.startsWith("image/");
      done({ name: f.name || "file", mime_type: f.type || undefined, data: url.slice(url.indexOf(",") + 1), size: f.size, ...(image ? { url } : {}) });
    };
    r.onerror = () => fail(r.error);
    r.readAsDataURL(f);
  });
}

const kb = (n: number) => (n < 1024 ? `${n} B` : `${Math.round(n / 1024)} KB`);

// Drafts belong to their chat (each thread opens on its own chat in this
// browser): kept in localStorage, so a draft survives a reload and text typed
// in one thread is never in another's box.
const DRAFTS = "parley.drafts";

function drafts(): Record<string, string> {
  try {
    return JSON.parse(localStorage.getItem(DRAFTS) ?? "{}") ?? {};
  } catch {
    return {};
  }
}

function saveDraft(chat: string, text: string) {
  if (!chat) return;
  const d = drafts();
  if ((d[chat] ?? "") === text) return;
  if (text) d[chat] = text;
  else delete d[chat];
  try {
    localStorage.setItem(DRAFTS, JSON.stringify(d));
  } catch {
    /* storage full or disabled: the draft lives only in the box */
  }
}

export function useComposer(store: Store, commands: Command[], turnActive: boolean, onSent?: () => void) {
  const chat = store.state.chat.chat;
  const [text, setTextNow] = useState(() => drafts()[chat] ?? "");
  const draftOf = useRef(chat);
  useEffect(() => {
    if (draftOf.current === chat) return;
    draftOf.current = chat;
    setTextNow(drafts()[chat] ?? "");
    setRecall(-1);
  }, [chat]);
  const setText = (v: string) => {
    setTextNow(v);
    saveDraft(draftOf.current, v);
  };
  // ↑ on an empty box recalls this thread's earlier prompts, newest first; ↓ goes back.
  const [recall, setRecall] = useState(-1);
  const prompts = () => store.state.chat.items.flatMap((i) => (i.kind === "user" && i.text ? [i.text] : [])).reverse();
  const [files, setFiles] = useState<Attached[]>([]);
  const [fileError, setFileError] = useState("");
  const [sel, setSel] = useState(0);
  const [dismissed, setDismissed] = useState(false);
  const suggestions = useMemo(() => {
    const m = /^\/(\S*)$/.exec(text);
    if (!m || dismissed) return [];
    const q = m[1].toLowerCase();
    return commands.filter((c) => c.name.replace(/^\//, "").toLowerCase().startsWith(q)).slice(0, 8);
  }, [text, commands, dismissed]);

  const complete = (c: Command) => {
    setText("/" + c.name.replace(/^\//, "") + " ");
    setSel(0);
  };
  const send = () => {
    const t = text.trim();
    if (!t && !files.length) return;
    store.sendMessage(t, undefined, files.map(({ name, mime_type, data }) => ({ name, data, ...(mime_type ? { mime_type } : {}) })));
    setText("");
    setRecall(-1);
    setFiles([]);
    setFileError("");
    onSent?.();
  };
  // addFiles attaches any files; one refused says why, never silently.
  const addFiles = (list: FileList | File[] | null | undefined): boolean => {
    const all = Array.from(list ?? []);
    if (!all.length) return false;
    if (files.length + all.length > maxFiles) {
      setFileError(`Not attached: at most ${maxFiles} files in one message.`);
      return true;
    }
    const total = files.reduce((n, f) => n + f.size, 0) + all.reduce((n, f) => n + f.size, 0);
    const maxFileBytes = fileBudget(store.state.maxMessageBytes);
    if (total > maxFileBytes) {
      const names = all.map((f) => `${f.name || "a file"} (${kb(f.size)})`).join(", ");
      setFileError(`Not attached: ${names}. Files may weigh at most ${kb(maxFileBytes)} together in one message.`);
      return true;
    }
    Promise.all(all.map(readFile)).then((got) => {
      setFileError("");
      setFiles((cur) => cur.concat(got));
    }, () => setFileError("Not attached: the browser could not read the file."));
    return true;
  };
  const removeFile = (i: number) => setFiles(files.filter((_, j) => j !== i));
  const onPaste = (e: ClipboardEvent) => {
    if (addFiles(e.clipboardData?.files)) e.preventDefault();
  };
  const onDrop = (e: DragEvent) => {
    if (addFiles(e.dataTransfer?.files)) e.preventDefault();
  };
  const onDragOver = (e: DragEvent) => {
    if (e.dataTransfer?.types.includes("Files")) e.preventDefault();
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (suggestions.length) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        setSel((s) => (s + (e.key === "ArrowDown" ? 1 : suggestions.length - 1)) % suggestions.length);
        return;
      }
      if (e.key === "Tab" || (e.key === "Enter" && !e.shiftKey)) {
        e.preventDefault();
        complete(suggestions[Math.min(sel, suggestions.length - 1)]);
        return;
      }
      if (e.key === "Escape") {
        e.preventDefault();
        setDismissed(true);
        return;
      }
    }
    if ((e.key === "ArrowUp" || e.key === "ArrowDown") && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey) {
      const list = prompts();
      const recalled = recall >= 0 && text === list[recall];
      if (e.key === "ArrowUp" && (text === "" || recalled) && recall + 1 < list.length) {
        e.preventDefault();
        setRecall(recall + 1);
        setText(list[recall + 1]);
        return;
      }
      if (e.key === "ArrowDown" && recalled) {
        e.preventDefault();
        setRecall(recall - 1);
        setText(recall > 0 ? list[recall - 1] : "");
        return;
      }
    }
    if (e.key === "Escape" && turnActive) {
      e.preventDefault();
      store.stop();
      return;
    }
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  };
  const onInput = (v: string) => {
    setText(v);
    setRecall(-1);
    setDismissed(false);
    setSel(0);
  };
  // dictate adds words heard by voice input to the box, for the person to
  // read and send (or not): it never sends.
  const dictate = (words: string) => {
    if (!words) return;
    setTextNow((cur) => {
      const v = cur && !/\s$/.test(cur) ? cur + " " + words : cur + words;
      saveDraft(draftOf.current, v);
      return v;
    });
  };
  const canSend = !!text.trim() || files.length > 0;
  return { text, onInput, dictate, suggestions, sel, complete, send, onKeyDown, files, fileError, addFiles, removeFile, onPaste, onDrop, onDragOver, canSend };
}
