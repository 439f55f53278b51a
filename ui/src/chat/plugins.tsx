// The IM plugins' state, shown where the agents are (desktop and phone alike).

import type { Store } from "../store";

export function Plugins({ store }: { store: Store }) {
  const plugins = store.state.plugins;
  if (!plugins.length) return null;
  return (
    <>
      <h3>Plugins</h3>
      <ul class="agents plugins">
        {plugins.map((p) => (
          <li key={p.id} data-plugin={p.id} title={p.last_error ?? ""}>
            <span class={`dot ${p.state === "running" ? "st-idle" : "st-crashed"}`} aria-hidden="true" />
            <span class="name">{p.id}</span>
            <span class="hint">
              {p.state}
              {p.restarts > 0 ? ` · ${p.restarts} restart${p.restarts === 1 ? "" : "s"}` : ""}
            </span>
          </li>
        ))}
      </ul>
    </>
  );
}
