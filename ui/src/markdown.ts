// Agent output is untrusted: Markdown is rendered with raw HTML escaped to text,
// then sanitized again with DOMPurify; code is highlighted by highlight.js core.

import { Marked } from "marked";
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const langs: Record<string, Parameters<typeof hljs.registerLanguage>[1]> = {
  bash, css, diff, go, javascript, json, python, rust, sql, typescript, xml, yaml,
};
for (const [name, l] of Object.entries(langs)) hljs.registerLanguage(name, l);
hljs.registerAliases(["sh", "shell", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx", "mjs"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["golang"], { languageName: "go" });
hljs.registerAliases(["yml"], { languageName: "yaml" });
hljs.registerAliases(["rs"], { languageName: "rust" });
hljs.registerAliases(["patch"], { languageName: "diff" });

export function escapeHTML(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

export function highlight(code: string, lang?: string): string {
  const l = (lang ?? "").trim().split(/\s/)[0].toLowerCase();
  if (l && hljs.getLanguage(l)) {
    try {
      return hljs.highlight(code, { language: l, ignoreIllegals: true }).value;
    } catch {
      /* fall through to plain text */
    }
  }
  return escapeHTML(code);
}

const md = new Marked({
  gfm: true,
  renderer: {
    // Raw HTML in agent output is shown as the text it is, never parsed.
    html({ text }) {
      return escapeHTML(text);
    },
    code({ text, lang }) {
      const l = (lang ?? "").trim().split(/\s/)[0];
      const cls = l && hljs.getLanguage(l) ? ` class="hljs language-${escapeHTML(l)}"` : ` class="hljs"`;
      return `<pre><code${cls}>${highlight(text, l)}</code></pre>\n`;
    },
  },
});

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

const cache = new Map<string, string>();

// render turns Markdown into sanitized HTML. Results are cached: a long thread
// re-renders without re-parsing every finished message.
export function render(src: string): string {
  const hit = cache.get(src);
  if (hit !== undefined) return hit;
  const raw = md.parse(src, { async: false }) as string;
  const html = DOMPurify.sanitize(raw, { FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select"], FORBID_ATTR: ["style"] });
  if (cache.size > 3000) cache.clear();
  cache.set(src, html);
  return html;
}
