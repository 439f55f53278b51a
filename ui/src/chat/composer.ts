// The composer's logic (draft, slash-command completion, send, Esc to stop, ↑ to
// recall earlier prompts), shared by both layouts; each layout draws its own box.

import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Command, ImageData } from "../protocol";
import type { Store } from "../store";

// Images above this many bytes (all together) would pass the server's message limit.
const maxImageBytes = 700 * 1024;

export type Attached = ImageData & { name: string; url: string };

function readImage(f: File): Promise<Attached> {
  return new Promise((done, fail) => {
    const r = new FileReader();
    r.onload = () => {
      const url = String(r.result);
      done({ mime_type: f.type, data: url.slice(url.indexOf(",") + 1), name: f.name || "image", url });
    };
    r.onerror = () => fail(r.error);
    r.readAsDataURL(f);
  });
}

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

export function useComposer(store: Store, commands: Command[], turnActive: boolean, acceptsImages = false, onSent?: () => void) {
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
  const [images, setImages] = useState<Attached[]>([]);
  const [imageError, setImageError] = useState("");
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
    if (!t && !images.length) return;
    store.sendMessage(t, undefined, images.map(({ mime_type, data }) => ({ mime_type, data })));
    setText("");
    setRecall(-1);
    setImages([]);
    setImageError("");
    onSent?.();
  };
  const addFiles = (files: FileList | File[] | null | undefined): boolean => {
    const all = Array.from(files ?? []);
    const list = all.filter((f) => f.type.startsWith("image/"));
    // A file that is not an image is not sent: say so, never drop it silently.
    const others = all.filter((f) => !f.type.startsWith("image/")).map((f) => f.name || "a file");
    if (others.length) {
      setImageError(`Not attached: ${others.join(", ")}. Only images go to the agent from here; put the file in the thread's working directory and name its path in your message.`);
      if (!list.length) return true;
    }
    if (!list.length) return false;
    if (!acceptsImages) {
      setImageError("This agent does not take images.");
      return true;
    }
    Promise.all(list.map(readImage)).then((got) => {
      if (images.concat(got).reduce((n, i) => n + i.data.length, 0) > maxImageBytes) {
        setImageError("Images too large: at most about 500 KB in one message.");
        return;
      }
      if (!others.length) setImageError("");
      setImages(images.concat(got));
    }, () => setImageError("Could not read the image."));
    return true;
  };
  const removeImage = (i: number) => setImages(images.filter((_, j) => j !== i));
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
  const canSend = !!text.trim() || images.length > 0;
  return { text, onInput, suggestions, sel, complete, send, onKeyDown, images, imageError, addFiles, removeImage, onPaste, onDrop, onDragOver, canSend, acceptsImages };
}
