// A unified patch (git diff's output) read into files, hunks and numbered lines.

export type PatchLine = { op: "add" | "del" | "same" | "meta"; text: string; old?: number; new?: number };
export type Hunk = { header: string; lines: PatchLine[] };
export type FilePatch = { path: string; meta: string[]; hunks: Hunk[] };

const unquote = (p: string) => (p.startsWith('"') && p.endsWith('"') ? p.slice(1, -1) : p);
const strip = (p: string) => unquote(p).replace(/^[ab]\//, "");

export function parsePatch(patch: string): FilePatch[] {
  const out: FilePatch[] = [];
  let f: FilePatch | undefined;
  let h: Hunk | undefined;
  let o = 0, n = 0;
  for (const line of patch.split("\n")) {
    if (line.startsWith("diff --git ")) {
      const m = /^diff --git (\S+|"[^"]*") (\S+|"[^"]*")$/.exec(line);
      f = { path: m ? strip(m[2]) : line.slice(11), meta: [], hunks: [] };
      h = undefined;
      out.push(f);
      continue;
    }
    if (!f) continue;
    const hm = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hm) {
      o = Number(hm[1]);
      n = Number(hm[2]);
      h = { header: line, lines: [] };
      f.hunks.push(h);
      continue;
    }
    if (!h) {
      if (line.startsWith("+++ ") && line !== "+++ /dev/null") f.path = strip(line.slice(4));
      else if (line && !line.startsWith("--- ") && !line.startsWith("+++ ")) f.meta.push(line);
      continue;
    }
    if (line.startsWith("+")) h.lines.push({ op: "add", text: line.slice(1), new: n++ });
    else if (line.startsWith("-")) h.lines.push({ op: "del", text: line.slice(1), old: o++ });
    else if (line.startsWith(" ")) h.lines.push({ op: "same", text: line.slice(1), old: o++, new: n++ });
    else if (line.startsWith("\\")) h.lines.push({ op: "meta", text: line });
  }
  return out;
}

// lineFor is the new version's line a comment on l names: its own, or for a
// removed line the new line that took its place (at least 1).
export function lineFor(h: Hunk, i: number): number {
  for (let j = i; j < h.lines.length; j++) if (h.lines[j].new !== undefined) return Math.max(1, h.lines[j].new!);
  for (let j = i; j >= 0; j--) if (h.lines[j].new !== undefined) return Math.max(1, h.lines[j].new! + 1);
  return Math.max(1, Number(/\+(\d+)/.exec(h.header)?.[1] ?? 1));
}

// hunkText is the hunk as git printed it, for a comment to quote.
export function hunkText(h: Hunk): string {
  return [h.header, ...h.lines.map((l) => (l.op === "meta" ? l.text : (l.op === "add" ? "+" : l.op === "del" ? "-" : " ") + l.text))].join("\n");
}
