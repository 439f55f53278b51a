// What the new-thread form says when the daemon has no agent at all: what to
// install, and how to add any ACP agent in the config, instead of an empty list
// and a Start button that stays disabled with no reason.

const CONFIG_EXAMPLE = `[[agent]]
id = "my-agent"
transport = "acp"
command = "/path/to/agent"
args = ["--acp"]`;

export function NoAgents() {
  return (
    <div class="noagents" role="alert" aria-label="No agent found">
      <h3>No agent found</h3>
      <p>parley looked for Claude Code (<code>claude</code>), Gemini CLI (<code>gemini</code>) and other agent programs on its <code>PATH</code> and found none, and its config file adds none. Install one, then restart <code>parley serve</code>:</p>
      <pre class="cmdline">npm install -g @anthropic-ai/claude-code</pre>
      <pre class="cmdline">npm install -g @google/gemini-cli</pre>
      <p>Or add any Agent Client Protocol agent to the config file (<code>~/.config/parley/config.toml</code>, or the file given with <code>--config</code>) and restart:</p>
      <pre class="cmdline">{CONFIG_EXAMPLE}</pre>
    </div>
  );
}
