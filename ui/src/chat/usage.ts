// Usage in words: a turn's tokens, cost and context fill, and a thread's totals,
// written once for the transcript and both headers.

export type Usage = { input_tokens?: number; output_tokens?: number; cost_usd?: number; context_tokens?: number; context_window?: number };
export type UsageTotals = { turns: number; input_tokens: number; output_tokens: number; cost_usd: number; context_tokens?: number; context_window?: number };

export const n = (v: number) => (v >= 10000 ? `${Math.round(v / 1000)}k` : v >= 1000 ? `${(v / 1000).toFixed(1)}k` : String(v));
export const usd = (v: number) => (v >= 0.01 ? `$${v.toFixed(2)}` : `$${v.toFixed(4)}`);

export function contextText(u: { context_tokens?: number; context_window?: number }): string {
  if (!u.context_tokens) return "";
  if (!u.context_window) return `context ${n(u.context_tokens)}`;
  return `context ${Math.round((100 * u.context_tokens) / u.context_window)}% (${n(u.context_tokens)} of ${n(u.context_window)})`;
}

// turnUsage is one turn's line: "1.2k in · 56 out · $0.0123 · context 12% (24k of 200k)".
export function turnUsage(u: Usage): string {
  const parts: string[] = [];
  if (u.input_tokens) parts.push(`${n(u.input_tokens)} in`);
  if (u.output_tokens) parts.push(`${n(u.output_tokens)} out`);
  if (u.cost_usd) parts.push(usd(u.cost_usd));
  const c = contextText(u);
  if (c) parts.push(c);
  return parts.join(" · ");
}

// threadUsage is the thread's totals: "3 turns · 4.1k tokens · $0.05 · context 12% (…)".
export function threadUsage(t: UsageTotals): string {
  if (!t.turns && !t.context_tokens) return "";
  const parts = [`${t.turns} turn${t.turns === 1 ? "" : "s"}`, `${n(t.input_tokens + t.output_tokens)} tokens`];
  if (t.cost_usd) parts.push(usd(t.cost_usd));
  const c = contextText(t);
  if (c) parts.push(c);
  return parts.join(" · ");
}
