// Keyboard shortcuts for the whole page and the overlay that lists them (`?`).

import { useEffect, useRef, useState } from "preact/hooks";
import type { Store } from "../store";
import { nav } from "../app";

export const shortcuts: [string, string][] = [
  ["Enter", "send (Shift+Enter: a new line)"],
  ["↑ / ↓ in an empty box", "earlier prompts of this thread"],
  ["Esc", "stop the running turn; close this help"],
  ["Alt+N", "new thread"],
  ["Alt+↑ / Alt+↓", "previous / next thread in the list"],
  ["Alt+1 … Alt+9", "the list's first … ninth thread"],
  ["?", "this help (outside a text box)"],
];

function typing(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  return !!el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT" || el.tagName === "SELECT" || el.isContentEditable);
}

// useShortcuts installs the page's shortcuts; it returns whether the help shows.
export function useShortcuts(store: Store): [boolean, (v: boolean) => void] {
  const [help, setHelpNow] = useState(false);
  // The listener is installed once and reads the overlay's state from here: a key
  // pressed before an effect could run again must see what is on screen.
  const shown = useRef(false);
  const setHelp = (v: boolean) => {
    shown.current = v;
    setHelpNow(v);
  };
  useEffect(() => {
    const f = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.isComposing) return;
      if (shown.current && e.key === "Escape") {
        e.preventDefault();
        setHelp(false);
        return;
      }
      if (e.key === "?" && !e.ctrlKey && !e.altKey && !e.metaKey && !typing(e.target)) {
        e.preventDefault();
        setHelp(!shown.current);
        return;
      }
      if (!e.altKey || e.ctrlKey || e.metaKey) return;
      const threads = store.state.threads;
      const cur = threads.findIndex((t) => t.id === store.state.chat.thread?.id);
      // e.code: Alt changes e.key on some layouts (Alt+N is "ñ" on a Mac).
      if (e.code === "KeyN") {
        e.preventDefault();
        nav.newThread();
      } else if ((e.key === "ArrowUp" || e.key === "ArrowDown") && threads.length) {
        e.preventDefault();
        const next = cur < 0 ? 0 : Math.min(Math.max(cur + (e.key === "ArrowDown" ? 1 : -1), 0), threads.length - 1);
        if (next !== cur) nav.thread(store, threads[next]);
      } else if (/^Digit[1-9]$/.test(e.code)) {
        const t = threads[Number(e.code.slice(5)) - 1];
        if (t) {
          e.preventDefault();
          nav.thread(store, t);
        }
      }
    };
    // Capture: the overlay's Esc goes before the page's Esc-to-stop.
    window.addEventListener("keydown", f, true);
    return () => window.removeEventListener("keydown", f, true);
  }, []);
  return [help, setHelp];
}

export function Help({ onClose }: { onClose: () => void }) {
  return (
    <div class="overlay" role="dialog" aria-modal="true" aria-label="Keyboard shortcuts" onClick={onClose}>
      <div class="help" onClick={(e) => e.stopPropagation()}>
        <h2>Keyboard shortcuts</h2>
        <table>
          <tbody>
            {shortcuts.map(([k, what]) => (
              <tr key={k}>
                <th scope="row">
                  <kbd>{k}</kbd>
                </th>
                <td>{what}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <button type="button" class="primary" onClick={onClose}>
          Close
        </button>
      </div>
    </div>
  );
}
