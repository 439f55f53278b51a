// proposeRule is the rule a permission card's "Make a rule…" offers (see
// chat/rules.tsx). Plain TypeScript with no imports, so src/propose.test.ts
// runs it under Node as is.

export type RuleSpec = { action: string; agent?: string; machine?: string; tool?: string; command?: string; paths?: string[]; for?: string };

// Programs whose second word names what they do (`go test`, `npm run`).
const withSubcommand = new Set(["go", "git", "npm", "pnpm", "yarn", "bun", "cargo", "docker", "kubectl", "make", "uv", "pip", "pip3",
  "poetry", "gh", "terraform", "dotnet", "mvn", "gradle", "deno", "npx", "rustup", "brew", "systemctl", "bazel", "just"]);

// Programs that run what their arguments say.
const runsOthers = new Set(["sudo", "doas", "su", "env", "bash", "sh", "zsh", "dash", "eval", "exec", "xargs", "nohup", "timeout", "nice", "watch"]);

const fileTools: Record<string, string> = { Edit: "file_path", MultiEdit: "file_path", Write: "file_path", NotebookEdit: "notebook_path" };

// proposeRule is the rule a card's "Make a rule…" offers: the tool and the
// command's first words and `*` (`go test ./...` → `go test *`), or for a
// file tool the file's directory.
export function proposeRule(tool: string, input: unknown, agent: string, cwd: string): RuleSpec {
  const spec: RuleSpec = { action: "allow", tool, ...(agent ? { agent } : {}) };
  const inp = (input ?? {}) as Record<string, unknown>;
  if (typeof inp.command === "string") {
    // The first simple command: its program, and its subcommand for a
    // program that has them, then the rest as *.
    const first = inp.command.trim().split(/&&|\|\||[;|&\n]/)[0];
    const words = first.trim().split(/\s+/).filter((w) => w && !/^\w+=/.test(w));
    const plain = (w: string) => /^[\w./:@+,=-]+$/.test(w);
    if (runsOthers.has(words[0])) {
      // Exactly this: `sudo *` would allow anything.
      spec.command = words.every(plain) ? words.join(" ") : inp.command.trim();
    } else if (words.length && plain(words[0])) {
      const keep = words.slice(0, 1);
      if (withSubcommand.has(words[0]) && words[1] && /^[A-Za-z][\w:-]*$/.test(words[1])) keep.push(words[1]);
      spec.command = [...keep, "*"].join(" ");
    } else {
      // Not plain words: the line as it is, for the person to edit (the
      // API refuses what is not one simple command). Never no command,
      // which would allow any.
      spec.command = inp.command.trim();
    }
    return spec;
  }
  const file = inp[fileTools[tool] ?? ""] ?? inp.file_path ?? inp.path;
  if (typeof file === "string" && file) {
    let dir = file.includes("/") ? file.slice(0, file.lastIndexOf("/")) : "";
    if (cwd && (dir === cwd || dir.startsWith(cwd + "/"))) dir = dir.slice(cwd.length + 1);
    spec.paths = [dir ? `${dir}/*` : "*"];
  }
  return spec;
}

