// An ACP client built on the official TypeScript SDK (@agentclientprotocol/sdk),
// run by acp_test.go. It starts `parley acp` (PARLEY_ACP_CMD, a JSON array),
// plays one fixed scenario and prints one JSON line per step on stdout, which the
// Go test reads and checks against what a web socket on the same thread saw.
//
// Steps: initialize; session/new; prompt "stream 5 10ms"; prompt "permission
// Bash" answered here with "allow"; prompt "permission Bash" left pending until
// the card is answered elsewhere (the request must be cancelled); a slow prompt
// cancelled with session/cancel; session/list.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const sdkDir = process.env.ACP_SDK_DIR;
const acp = await import(pathToFileURL(join(sdkDir, "node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js")).href);
const { client, methods, ndJsonStream } = acp;

const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const [cmd, ...args] = JSON.parse(process.env.PARLEY_ACP_CMD);
const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "inherit"] });
child.on("exit", (code, signal) => out({ step: "child_exit", code, signal }));

const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

let chunks = [];
let onChunk = () => {};
const extTypes = new Set();
let permissionMode = "allow";
let pendingAbort = null;

const app = client({ name: "parley-acp-test" })
  .onNotification(methods.client.session.update, ({ params }) => {
    const u = params.update;
    if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") {
      chunks.push(u.content.text);
      onChunk(u.content.text);
    }
  })
  .onNotification("*", ({ method }) => {
    extTypes.add(method);
  })
  .onRequest(methods.client.session.requestPermission, async ({ params, signal }) => {
    const requestId = params._meta?.["parley/request_id"];
    if (permissionMode === "allow") {
      out({ step: "permission", requestId, title: params.toolCall.title, options: params.options.map((o) => o.optionId) });
      return { outcome: { outcome: "selected", optionId: "allow" } };
    }
    out({ step: "permission_pending", requestId });
    await new Promise((resolve) => {
      if (signal.aborted) return resolve();
      signal.addEventListener("abort", resolve, { once: true });
    });
    out({ step: "permission_aborted", requestId });
    return { outcome: { outcome: "cancelled" } };
  });

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
    });
    out({ step: "initialize", protocolVersion: init.protocolVersion, loadSession: init.agentCapabilities?.loadSession, agent: init.agentInfo?.name });

    const sess = await ctx.request(methods.agent.session.new, { cwd: process.env.ACP_CWD, mcpServers: [] });
    const sessionId = sess.sessionId;
    out({ step: "new", sessionId, thread: sess._meta?.["parley/thread"] });

    const prompt = async (text) =>
      ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });

    chunks = [];
    let r = await prompt("stream 5 10ms");
    out({ step: "stream", stopReason: r.stopReason, text: chunks.join("") });

    chunks = [];
    r = await prompt("permission Bash");
    out({ step: "permission_done", stopReason: r.stopReason, text: chunks.join("") });

    permissionMode = "pending";
    chunks = [];
    r = await prompt("permission Bash");
    out({ step: "elsewhere_done", stopReason: r.stopReason, text: chunks.join("") });

    chunks = [];
    const first = new Promise((resolve) => (onChunk = resolve));
    const slow = prompt("stream 1000 20ms");
    await first;
    onChunk = () => {};
    await ctx.notify(methods.agent.session.cancel, { sessionId });
    r = await slow;
    out({ step: "cancel", stopReason: r.stopReason, chunks: chunks.length });

    const list = await ctx.request(methods.agent.session.list, {});
    out({ step: "list", sessions: list.sessions.map((s) => s.sessionId) });
    out({ step: "ext", methods: [...extTypes].sort() });
  });
  out({ step: "done" });
} catch (err) {
  out({ step: "error", message: String(err?.stack ?? err) });
} finally {
  child.stdin.end();
}
