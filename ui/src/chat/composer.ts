// The composer's logic (draft, slash-command completion, send, Esc to stop),
// shared by both layouts; each layout draws its own box.

import { useMemo, useState } from "preact/hooks";
import type { Command } from "../protocol";
import type { Store } from "../store";

export function useComposer(store: Store, commands: Command[], turnActive: boolean) {
  const [text, setText] = useState("");
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
    if (!t) return;
    store.sendMessage(t);
    setText("");
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
    setDismissed(false);
    setSel(0);
  };
  return { text, onInput, suggestions, sel, complete, send, onKeyDown };
}
