// taskgraph mcp driven by real MCP clients, not by our own protocol code:
//
//   1. the official TypeScript SDK (@modelcontextprotocol/sdk), through its
//      StdioClientTransport, with the taskgraph tools and with
//      --tools claude-code;
//   2. the MCP Inspector's CLI (@modelcontextprotocol/inspector-cli, the
//      program `npx @modelcontextprotocol/inspector --cli` runs), run as a
//      separate process, its JSON output checked;
//   3. both again over Streamable HTTP, against the /mcp of a `taskgraph
//      serve` (the hub), with a bearer token in the Authorization header:
//      the session acts as the token's name, a viewer's token cannot write,
//      no token and another token on the session are refused.
//
// It builds nothing: it is given the path to a built taskgraph binary.
//
//   node clients.mjs /path/to/taskgraph
//
// Each check prints one line; the last line is "mcpclients: N passed, N
// failed". Any failed check (or a client that errs or hangs) exits 1.
// Versions are pinned exactly in package.json / package-lock.json.

import { execFile, spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, isAbsolute, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const here = dirname(fileURLToPath(import.meta.url));
const run = promisify(execFile);

const binArg = process.argv[2];
if (!binArg) {
  console.error("usage: node clients.mjs /path/to/taskgraph");
  process.exit(2);
}
const bin = isAbsolute(binArg) ? binArg : resolve(binArg);
if (!existsSync(bin)) {
  console.error(`mcpclients: no taskgraph binary at ${bin}`);
  process.exit(2);
}

const pkgVersion = (name) =>
  JSON.parse(readFileSync(join(here, "node_modules", name, "package.json"), "utf8")).version;

let passed = 0;
let failed = 0;
function check(section, what, ok, detail) {
  if (ok) {
    passed++;
    console.log(`ok   [${section}] ${what}`);
  } else {
    failed++;
    console.log(`FAIL [${section}] ${what}`);
    if (detail !== undefined) {
      console.log("     " + String(detail).replaceAll("\n", "\n     "));
    }
  }
}
const eq = (section, what, got, want) =>
  check(section, what, got === want, `want: ${JSON.stringify(want)}\n got: ${JSON.stringify(got)}`);
const has = (section, what, got, want) =>
  check(section, what, typeof got === "string" && got.includes(want), `want text containing: ${JSON.stringify(want)}\n got: ${JSON.stringify(got)}`);

// withTimeout fails a section that hangs instead of hanging CI.
function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

const textOf = (result) => (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

// connect starts `taskgraph mcp --dir <dir> ...extra` through the SDK's stdio transport.
async function connect(dir, extra) {
  const transport = new StdioClientTransport({
    command: bin,
    args: ["mcp", "--dir", dir, ...extra],
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d) => (stderr += d));
  const client = new Client({ name: "taskgraph-mcpclients", version: "1.0.0" });
  try {
    await client.connect(transport);
  } catch (err) {
    throw new Error(`initialize with ${bin} mcp --dir ${dir} ${extra.join(" ")} failed: ${err.message}\n--- its stderr:\n${stderr}`);
  }
  return { client, stderr: () => stderr };
}

const TASKGRAPH_TOOLS = [
  "task_create", "task_update", "task_list", "task_get", "task_plan", "task_claim",
  "task_claim_next", "task_complete", "task_fail", "task_note", "task_release", "task_renew",
  "task_delete", "task_wait",
];
const CLAUDE_CODE_TOOLS = ["TaskCreate", "TaskGet", "TaskUpdate", "TaskList"];

function checkToolList(section, tools, want) {
  const names = tools.map((t) => t.name).sort();
  eq(section, `tools/list names exactly ${want.join(", ")}`, names.join(","), [...want].sort().join(","));
  for (const t of tools) {
    check(section, `${t.name} has an inputSchema of type object`,
      t.inputSchema && t.inputSchema.type === "object" && typeof t.inputSchema.properties === "object",
      JSON.stringify(t.inputSchema));
  }
}

// sdkTaskgraph: the taskgraph tool set through the TypeScript SDK.
async function sdkTaskgraph(work) {
  const S = "sdk";
  const dir = join(work, "sdk", ".tasks");
  const { client, stderr } = await connect(dir, ["--lease", "10m"]);
  try {
    const server = client.getServerVersion();
    eq(S, "server names itself taskgraph in initialize", server?.name, "taskgraph");
    const caps = client.getServerCapabilities();
    check(S, "server declares the tools capability", !!caps?.tools, JSON.stringify(caps));

    const { tools } = await client.listTools();
    checkToolList(S, tools, TASKGRAPH_TOOLS);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    eq(S, "task_list is annotated read-only", byName.task_list?.annotations?.readOnlyHint, true);
    eq(S, "task_delete is annotated destructive", byName.task_delete?.annotations?.destructiveHint, true);
    check(S, "task_create requires subject", byName.task_create?.inputSchema?.required?.includes("subject"),
      JSON.stringify(byName.task_create?.inputSchema));
    // Structured output: the SDK's callTool validates structuredContent
    // against the outputSchema (and fails a result without it), so every
    // call below of these four also checks that.
    const STRUCTURED = ["task_claim_next", "task_get", "task_list", "task_wait"];
    eq(S, "outputSchema (type object) on exactly task_get, task_list, task_claim_next and task_wait",
      tools.filter((t) => t.outputSchema?.type === "object").map((t) => t.name).sort().join(","), STRUCTURED.join(","));
    eq(S, "no other tool declares an outputSchema", tools.filter((t) => t.outputSchema && !STRUCTURED.includes(t.name)).length, 0);

    const call = async (name, args = {}) => client.callTool({ name, arguments: args });

    let r = await call("task_create", { subject: "write the parser" });
    check(S, "task_create #1 is not an error", !r.isError, textOf(r));
    const t1 = JSON.parse(textOf(r));
    eq(S, "task_create #1 answers id 1", t1.id, 1);
    eq(S, "task_create #1 is pending", t1.status, "pending");

    r = await call("task_create", { subject: "test the parser" });
    eq(S, "task_create #2 answers id 2", JSON.parse(textOf(r)).id, 2);

    r = await call("task_update", { task_id: 2, addBlockedBy: [1] });
    check(S, "task_update #2 addBlockedBy [1] is not an error", !r.isError, textOf(r));
    eq(S, "task_update #2 is blocked by [1]", JSON.stringify(JSON.parse(textOf(r)).blockedBy), "[1]");

    r = await call("task_list", {});
    eq(S, "task_list shows #2 blocked by #1", textOf(r), "[ ] #1: write the parser\n[ ] #2: test the parser (blocked by: [1])");
    eq(S, "task_list's structuredContent: the same tasks, with their state", JSON.stringify(r.structuredContent),
      JSON.stringify({ tasks: [{ id: 1, subject: "write the parser", status: "pending", state: "ready" },
        { id: 2, subject: "test the parser", status: "pending", state: "blocked", blockedBy: [1] }] }));
    r = await call("task_list", { ready: true });
    eq(S, "task_list ready:true shows only #1", textOf(r), "[ ] #1: write the parser");

    r = await call("task_claim_next", {});
    has(S, "task_claim_next claims #1", textOf(r), "Claimed #1: write the parser");
    const claimed = JSON.parse(textOf(r).split("\n").slice(1).join("\n"));
    eq(S, "claimed #1 is in_progress", claimed.status, "in_progress");
    check(S, "claimed #1 has the server's session identity as owner", /^mcp-.+-\d+-[0-9a-f]{6}$/.test(claimed.owner), claimed.owner);
    check(S, "the claim reply carries leaseExpiresAt", !!claimed.leaseExpiresAt, textOf(r));
    eq(S, "task_claim_next's structuredContent: outcome claimed", r.structuredContent?.outcome, "claimed");
    eq(S, "task_claim_next's structuredContent: the task claimed, owner and lease as in the text",
      JSON.stringify([r.structuredContent?.task?.id, r.structuredContent?.task?.owner, Date.parse(r.structuredContent?.task?.leaseExpiresAt)]),
      JSON.stringify([1, claimed.owner, Date.parse(claimed.leaseExpiresAt)]));

    // The lease, as the graph stores it: the task file's JSON in the directory.
    const file = JSON.parse(readFileSync(join(dir, "task_1.json"), "utf8"));
    eq(S, "task_1.json: status in_progress", file.status, "in_progress");
    eq(S, "task_1.json: owner is the claimer", file.owner, claimed.owner);
    const left = Date.parse(file.leaseExpiresAt) - Date.now();
    check(S, "task_1.json: leaseExpiresAt set, about 10m ahead (--lease 10m)",
      Number.isFinite(left) && left > 9 * 60e3 && left <= 10 * 60e3 + 5e3,
      `leaseExpiresAt: ${JSON.stringify(file.leaseExpiresAt)} (${Math.round(left / 1000)} s from now)`);

    r = await call("task_claim_next", {});
    eq(S, "task_claim_next with #1 held and #2 blocked says so", textOf(r), "Nothing ready now: 1 held by you, 1 blocked.");
    eq(S, "task_claim_next's structuredContent: outcome wait", JSON.stringify(r.structuredContent), JSON.stringify({ outcome: "wait" }));

    r = await call("task_note", { task_id: 1, text: "the grammar is in docs/grammar.md" });
    eq(S, "task_note on #1", textOf(r), "Noted on #1: write the parser");
    r = await call("task_get", { task_id: 1 });
    const noted = JSON.parse(textOf(r));
    eq(S, "task_get shows the note, by its author", JSON.stringify(noted.notes?.map((n) => [n.author, n.text])),
      JSON.stringify([[claimed.owner, "the grammar is in docs/grammar.md"]]));
    eq(S, "task_get's structuredContent: the task with its note", JSON.stringify([r.structuredContent?.task?.id, r.structuredContent?.task?.blocks,
      r.structuredContent?.task?.notes?.map((n) => [n.author, n.text])]), JSON.stringify([1, [2], [[claimed.owner, "the grammar is in docs/grammar.md"]]]));
    const history = JSON.parse(readFileSync(join(dir, "task_1.json"), "utf8")).history;
    eq(S, "task_1.json: the history records the claim and the note", JSON.stringify(history?.map((h) => h.event)), JSON.stringify(["claimed", "noted"]));

    r = await call("task_complete", { task_id: 1, result: "parser written" });
    eq(S, "task_complete #1 names the task it unblocked", textOf(r), "Completed #1: write the parser\nUnblocked: #2 test the parser");

    r = await call("task_claim_next", {});
    has(S, "task_claim_next then claims #2", textOf(r), "Claimed #2: test the parser");
    r = await call("task_complete", { task_id: 2 });
    eq(S, "task_complete #2", textOf(r), "Completed #2: test the parser");

    r = await call("task_list", {});
    const lines = textOf(r).split("\n");
    check(S, "task_list shows both completed", lines.length === 2 && lines.every((l) => l.startsWith("[x] #")), textOf(r));

    const started = Date.now();
    r = await withTimeout(call("task_wait", {}), 10e3, "task_wait on a finished graph");
    eq(S, "task_wait on a finished graph", textOf(r), "Finished: nothing left to do.");
    eq(S, "task_wait's structuredContent: outcome finished", JSON.stringify(r.structuredContent), JSON.stringify({ outcome: "finished" }));
    check(S, "task_wait on a finished graph answers at once (< 2 s)", Date.now() - started < 2000, `${Date.now() - started} ms`);
    r = await call("task_claim_next", {});
    eq(S, "task_claim_next on a finished graph", textOf(r), "Finished: nothing left to do.");

    r = await call("task_get", { task_id: 99 });
    eq(S, "task_get of a missing id is flagged isError", r.isError, true);
    eq(S, "task_get of a missing id says why", textOf(r), "Error: task 99 not found");
    eq(S, "task_get of a missing id has no structuredContent", r.structuredContent, undefined);
    r = await call("task_get", { task_id: 1 });
    check(S, "task_get of #1 is not flagged isError", r.isError !== true, JSON.stringify(r));
  } catch (err) {
    console.log(`--- taskgraph mcp stderr:\n${stderr()}`);
    throw err;
  } finally {
    await client.close();
  }
}

// sdkClaudeCode: --tools claude-code through the TypeScript SDK.
async function sdkClaudeCode(work) {
  const S = "sdk claude-code";
  const dir = join(work, "claude-code", ".tasks");
  const { client, stderr } = await connect(dir, ["--tools", "claude-code"]);
  try {
    const { tools } = await client.listTools();
    checkToolList(S, tools, CLAUDE_CODE_TOOLS);
    const call = async (name, args = {}) => client.callTool({ name, arguments: args });

    let r = await call("TaskCreate", { subject: "write the parser", description: "a parser", activeForm: "Writing the parser" });
    eq(S, "TaskCreate #1", textOf(r), "Task #1 created successfully: write the parser");
    r = await call("TaskCreate", { subject: "test the parser", description: "its tests" });
    eq(S, "TaskCreate #2", textOf(r), "Task #2 created successfully: test the parser");
    r = await call("TaskUpdate", { taskId: "2", addBlockedBy: ["1"] });
    eq(S, "TaskUpdate #2 addBlockedBy", textOf(r), "Updated task #2 addBlockedBy");
    r = await call("TaskList", {});
    eq(S, "TaskList shows #2 blocked by #1", textOf(r), "#1 [pending] write the parser\n#2 [pending] test the parser [blocked by #1]");
    r = await call("TaskUpdate", { taskId: "1", addBlockedBy: ["2"] });
    eq(S, "TaskUpdate closing a cycle is flagged isError", r.isError, true);
    eq(S, "TaskUpdate closing a cycle says why", textOf(r), "Error: adding 2 -> 1 would create a cycle 1 -> 2 -> 1");
    r = await call("TaskUpdate", { taskId: "1", status: "in_progress" });
    eq(S, "TaskUpdate #1 status in_progress", textOf(r), "Updated task #1 status");
    const file = JSON.parse(readFileSync(join(dir, "task_1.json"), "utf8"));
    eq(S, "task_1.json: in_progress", file.status, "in_progress");
    check(S, "task_1.json: leaseExpiresAt set (the default lease)", !!file.leaseExpiresAt && Date.parse(file.leaseExpiresAt) > Date.now(),
      JSON.stringify(file.leaseExpiresAt));
    eq(S, "task_1.json: activeForm kept in metadata", file.metadata?.activeForm, "Writing the parser");
    r = await call("TaskUpdate", { taskId: "1", status: "completed" });
    eq(S, "TaskUpdate #1 status completed", textOf(r), "Updated task #1 status");
    r = await call("TaskList", {});
    check(S, "TaskList shows #1 completed and #2 no longer blocked",
      /^#1 \[completed\] write the parser \(mcp-[^)]+\)\n#2 \[pending\] test the parser$/.test(textOf(r)), textOf(r));
    r = await call("TaskGet", { taskId: "99" });
    eq(S, "TaskGet of a missing id is flagged isError", r.isError, true);
  } catch (err) {
    console.log(`--- taskgraph mcp stderr:\n${stderr()}`);
    throw err;
  } finally {
    await client.close();
  }
}

// inspector runs the MCP Inspector's CLI as its own process, the way a
// person would (npx @modelcontextprotocol/inspector --cli ...), from the
// pinned install, on `taskgraph mcp --dir dir`, and parses the JSON it
// prints.
async function inspector(dir, ...args) {
  return inspectorRun(bin, "mcp", "--dir", dir, ...args);
}

// inspectorRun runs the Inspector's CLI on a target: a command and its
// arguments, or a URL.
async function inspectorRun(...args) {
  const cli = join(here, "node_modules", "@modelcontextprotocol", "inspector-cli", "build", "cli.js");
  const argv = [cli, "--cli", ...args];
  let out;
  try {
    out = await run(process.execPath, argv, { timeout: 30e3, maxBuffer: 16 << 20 });
  } catch (err) {
    throw new Error(`inspector ${args.join(" ")} failed (exit ${err.code}): ${err.stderr || err.message}`);
  }
  try {
    return JSON.parse(out.stdout);
  } catch {
    throw new Error(`inspector ${args.join(" ")} printed no JSON: ${out.stdout}\n${out.stderr}`);
  }
}

// startHub runs `taskgraph init`, `taskgraph token add` for an agent and a
// viewer, and `taskgraph serve` on a free loopback port in a directory of
// its own; it returns the URL of /mcp, the tokens, the directory and a stop.
async function startHub(work) {
  const dir = join(work, "hub");
  mkdirSync(dir, { recursive: true });
  await run(bin, ["init"], { cwd: dir });
  const token = async (name, role) =>
    (await run(bin, ["token", "add", name, "--role", role], { cwd: dir })).stdout.trim();
  const agent = await token("builder", "agent");
  const viewer = await token("watcher", "viewer");
  const proc = spawn(bin, ["serve", "--addr", "127.0.0.1:0"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (d) => (stderr += d));
  const base = await withTimeout(new Promise((resolveURL, reject) => {
    let out = "";
    proc.stdout.on("data", (d) => {
      out += d;
      const nl = out.indexOf("\n");
      if (nl >= 0) resolveURL(out.slice(0, nl).trim());
    });
    proc.on("exit", (code) => reject(new Error(`taskgraph serve exited (${code}): ${stderr}`)));
  }), 10e3, "taskgraph serve printing its URL");
  const stop = () => new Promise((done) => {
    if (proc.exitCode !== null) return done();
    proc.on("exit", done);
    proc.kill("SIGINT");
  });
  return { url: new URL("mcp", base).href, agent, viewer, dir, stop, stderr: () => stderr };
}

// connectHTTP opens a session at url with the SDK's Streamable HTTP
// transport, sending token as a bearer header, as an HTTP-only host does.
async function connectHTTP(url, token) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: "taskgraph-mcpclients", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

// sdkHTTP: the taskgraph tools through the SDK's Streamable HTTP client,
// against the hub's /mcp.
async function sdkHTTP(hub) {
  const S = "sdk http";
  let refused = null;
  try {
    const { client } = await connectHTTP(hub.url, "");
    await client.close();
  } catch (err) {
    refused = err;
  }
  check(S, "no token: initialize is refused (401, kind unauthorized)",
    refused?.code === 401 && String(refused?.message).includes('"kind":"unauthorized"'), `${refused?.code} ${refused}`);

  const { client, transport } = await connectHTTP(hub.url, hub.agent);
  try {
    eq(S, "server names itself taskgraph in initialize", client.getServerVersion()?.name, "taskgraph");
    const { tools } = await client.listTools();
    checkToolList(S, tools, TASKGRAPH_TOOLS);
    const call = async (name, args = {}) => client.callTool({ name, arguments: args });

    let r = await call("task_create", { subject: "write the parser" });
    check(S, "task_create is not an error", !r.isError, textOf(r));
    eq(S, "task_create answers id 1", JSON.parse(textOf(r)).id, 1);
    r = await call("task_claim_next", {});
    has(S, "task_claim_next claims #1", textOf(r), "Claimed #1: write the parser");
    const claimed = JSON.parse(textOf(r).split("\n").slice(1).join("\n"));
    eq(S, "the claim's owner is the token's name", claimed.owner, "builder");
    const file = JSON.parse(readFileSync(join(hub.dir, ".tasks", "task_1.json"), "utf8"));
    eq(S, "task_1.json (the hub's directory): owner builder", file.owner, "builder");
    check(S, "task_1.json: leaseExpiresAt set (the hub's MCP lease)", !!file.leaseExpiresAt && Date.parse(file.leaseExpiresAt) > Date.now(),
      JSON.stringify(file.leaseExpiresAt));
    r = await call("task_note", { task_id: 1, text: "grammar in docs/grammar.md" });
    eq(S, "task_note on #1", textOf(r), "Noted on #1: write the parser");

    // Another token on this session: refused, nothing done.
    const hijack = await fetch(hub.url, {
      method: "POST",
      headers: {
        "Content-Type": "application/json", Accept: "application/json, text/event-stream",
        Authorization: `Bearer ${hub.viewer}`, "Mcp-Session-Id": transport.sessionId,
        "Mcp-Protocol-Version": transport.protocolVersion ?? "2025-06-18",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "tools/call", params: { name: "task_complete", arguments: { task_id: 1 } } }),
    });
    eq(S, "another token on the session is refused (403)", hijack.status, 403);

    r = await call("task_complete", { task_id: 1 });
    eq(S, "task_complete #1", textOf(r), "Completed #1: write the parser");
    const started = Date.now();
    r = await withTimeout(call("task_wait", {}), 10e3, "task_wait on a finished graph");
    eq(S, "task_wait on a finished graph", textOf(r), "Finished: nothing left to do.");
    check(S, "task_wait answers at once (< 2 s)", Date.now() - started < 2000, `${Date.now() - started} ms`);
    r = await call("task_get", { task_id: 99 });
    eq(S, "task_get of a missing id is flagged isError", r.isError, true);
    eq(S, "task_get of a missing id says why", textOf(r), "Error: task 99 not found");
  } finally {
    await client.close();
  }

  const viewer = await connectHTTP(hub.url, hub.viewer);
  try {
    let r = await viewer.client.callTool({ name: "task_list", arguments: {} });
    has(S, "a viewer's token reads", textOf(r), "#1: write the parser");
    r = await viewer.client.callTool({ name: "task_create", arguments: { subject: "not mine to add" } });
    eq(S, "a viewer's task_create is flagged isError", r.isError, true);
    has(S, "a viewer's task_create says it may not", textOf(r), "the token may not do this");
    r = await viewer.client.callTool({ name: "task_list", arguments: {} });
    check(S, "and nothing was created", !textOf(r).includes("not mine to add"), textOf(r));
  } finally {
    await viewer.client.close();
  }
}

// inspectorHTTP: the Inspector's CLI against the hub's /mcp, the token in
// --header, as an HTTP-only host is configured.
async function inspectorHTTP(hub) {
  const S = "inspector http";
  const auth = ["--transport", "http", "--header", `Authorization: Bearer ${hub.agent}`];
  const list = await inspectorRun(hub.url, ...auth, "--method", "tools/list");
  checkToolList(S, list.tools ?? [], TASKGRAPH_TOOLS);
  let r = await inspectorRun(hub.url, ...auth, "--method", "tools/call", "--tool-name", "task_create",
    "--tool-arg", "subject=ship it", "--tool-arg", "priority=0", "--tool-arg", 'labels=["release"]');
  check(S, "task_create is not an error", r.isError !== true, JSON.stringify(r));
  const created = JSON.parse(textOf(r));
  eq(S, "task_create took the labels array", JSON.stringify(created.labels), '["release"]');
  r = await inspectorRun(hub.url, ...auth, "--method", "tools/call", "--tool-name", "task_claim", "--tool-arg", `task_id=${created.id}`);
  has(S, "task_claim in another session claims it", textOf(r), `"owner": "builder"`);
  let refused = null;
  try {
    await inspectorRun(hub.url, "--transport", "http", "--method", "tools/list");
  } catch (err) {
    refused = err;
  }
  check(S, "without the header the Inspector is refused", refused !== null, "it listed the tools");
}

async function inspectorCLI(work) {
  const S = "inspector";
  const dir = join(work, "inspector", ".tasks");
  const list = await inspector(dir, "--method", "tools/list");
  checkToolList(S, list.tools ?? [], TASKGRAPH_TOOLS);

  let r = await inspector(dir, "--method", "tools/call", "--tool-name", "task_create",
    "--tool-arg", "subject=ship it", "--tool-arg", "priority=0", "--tool-arg", 'labels=["release"]');
  check(S, "task_create is not an error", r.isError !== true, JSON.stringify(r));
  const created = JSON.parse(textOf(r));
  eq(S, "task_create answers id 1", created.id, 1);
  eq(S, "task_create took the labels array", JSON.stringify(created.labels), '["release"]');
  eq(S, "task_create took priority 0 as a number", JSON.parse(readFileSync(join(dir, "task_1.json"), "utf8")).priority, 0);

  r = await inspector(dir, "--method", "tools/call", "--tool-name", "task_list");
  eq(S, "task_list, in a second server process, shows the task", textOf(r), "[ ] #1: ship it P0 {release}");

  r = await inspector(dir, "--method", "tools/call", "--tool-name", "task_get", "--tool-arg", "task_id=42");
  eq(S, "task_get of a missing id is flagged isError", r.isError, true);
  eq(S, "task_get of a missing id says why", textOf(r), "Error: task 42 not found");
}

const work = mkdtempSync(join(tmpdir(), "taskgraph-mcpclients-"));
const versions = `@modelcontextprotocol/sdk ${pkgVersion("@modelcontextprotocol/sdk")}, @modelcontextprotocol/inspector-cli ${pkgVersion("@modelcontextprotocol/inspector-cli")}, node ${process.version}`;
console.log(`mcpclients: ${bin} against ${versions}`);
const sections = [
  ["TypeScript SDK, taskgraph tools", sdkTaskgraph],
  ["TypeScript SDK, --tools claude-code", sdkClaudeCode],
  ["MCP Inspector --cli", inspectorCLI],
];
async function runSection(name, fn) {
  const started = Date.now();
  try {
    await withTimeout(fn(), 60e3, name);
  } catch (err) {
    failed++;
    console.log(`FAIL [${name}] ${process.env.MCPCLIENTS_STACK ? err?.stack : err?.message ?? err}`);
  }
  console.log(`--   ${name}: ${Date.now() - started} ms`);
}
for (const [name, fn] of sections) {
  await runSection(name, () => fn(work));
}
let hub = null;
await runSection("taskgraph serve, the hub", async () => { hub = await startHub(work); });
if (hub) {
  await runSection("TypeScript SDK over Streamable HTTP, the hub's /mcp", () => sdkHTTP(hub));
  await runSection("MCP Inspector --cli over Streamable HTTP, the hub's /mcp", () => inspectorHTTP(hub));
  await runSection("taskgraph serve stops on an interrupt, sessions open or not", () => withTimeout(hub.stop(), 10e3, "stopping taskgraph serve"));
  if (failed > 0) console.log(`--- taskgraph serve stderr:\n${hub.stderr()}`);
}
rmSync(work, { recursive: true, force: true });
console.log(`mcpclients: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
