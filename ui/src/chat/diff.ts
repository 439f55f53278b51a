// A line diff (longest common subsequence) for showing an edit's old and new text,
// and the changes a tool's input proposes.

import type { Diff } from "../protocol";

// proposedDiffs reads the change a file tool will make from its input (Claude
// Code's Edit, MultiEdit and Write, from either transport or the hook of
// claude-tmux): what a permission card shows before it is answered.
export function proposedDiffs(tool: string, input: unknown): Diff[] {
  const o = input && typeof input === "object" ? (input as Record<string, unknown>) : {};
  const path = typeof o.file_path === "string" ? o.file_path : "";
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  if (!path) return [];
  switch (tool) {
    case "Edit": {
      const old = str(o.old_string), now = str(o.new_string);
      return old !== undefined && now !== undefined ? [{ path, old_text: old, new_text: now }] : [];
    }
    case "MultiEdit":
      return Array.isArray(o.edits)
        ? o.edits.flatMap((e) => {
            const old = str(e?.old_string), now = str(e?.new_string);
            return old !== undefined && now !== undefined ? [{ path, old_text: old, new_text: now }] : [];
          })
        : [];
    case "Write": {
      const content = str(o.content);
      return content !== undefined ? [{ path, new_text: content }] : [];
    }
  }
  return [];
}

export type DiffLine = { op: "same" | "add" | "del"; text: string };

export function lineDiff(a: string, b: string): DiffLine[] {
  const lines = (s: string) => (s === "" ? [] : s.replace(/\n$/, "").split("\n"));
  const x = lines(a);
  const y = lines(b);
  // Large inputs: skip the quadratic table and show old then new.
  if (x.length * y.length > 250_000) {
    return [...x.map((text) => ({ op: "del" as const, text })), ...y.map((text) => ({ op: "add" as const, text }))];
  }
  const n = x.length, m = y.length;
  const t = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) t[i][j] = x[i] === y[j] ? t[i + 1][j + 1] + 1 : Math.max(t[i + 1][j], t[i][j + 1]);
  const out: DiffLine[] = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) {
      out.push({ op: "same", text: x[i] });
      i++;
      j++;
    } else if (t[i + 1][j] >= t[i][j + 1]) out.push({ op: "del", text: x[i++] });
    else out.push({ op: "add", text: y[j++] });
  }
  while (i < n) out.push({ op: "del", text: x[i++] });
  while (j < m) out.push({ op: "add", text: y[j++] });
  return out;
}
