/**
 * A browser task's MCP server that starts slowly (Node and Playwright's start on a loaded
 * machine) must still reach the harness's first model call: a first turn without the browser's
 * tools makes the model write its tool calls as text, and the rollout fails for nothing. Claude
 * Code 2.1.119–2.1.220 in print mode waits 5 s at most for `--mcp-config` servers unless told
 * otherwise (the claude-code adapter's MCP_CONNECTION_NONBLOCKING / MCP_CONNECT_TIMEOUT_MS); codex
 * and opencode wait up to their configured start-up timeouts. Each harness that takes MCP
 * servers is run by its adapter through the real proxy, with the real Playwright MCP server
 * started 7 s late, and its first recorded call must offer the browser's tools. Skipped, saying
 * why, for a harness CLI (or node, chromium) that is not installed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { startProxy } from "../../proxy/index.ts";
import { createContentStore, readRecords, requestBodyOf } from "../../records/index.ts";
import type { ModelCall } from "../../schemas/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { DEFAULT_BROWSER_SETTINGS, browserMcpServer } from "../../workflows/gui/browser.ts";
import { harnessUnavailable, launchHarness } from "../../workflows/harnesses/index.ts";

const ADMIN = "gui-mcp-start-admin";
const DELAY_S = 7; // past Claude Code's 5 s print-mode bound
const HARNESSES = ["claude-code", "codex", "opencode"] as const;
const SLOW = 180_000;

const missingTools = [Bun.which("node") ? undefined : "node", Bun.which("chromium") ?? Bun.which("chromium-browser") ? undefined : "chromium"].filter(Boolean);
if (missingTools.length > 0) console.warn(`gui-mcp-start: skipping: missing ${missingTools.join(", ")}`);

let root: string;
let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "forge-gui-mcp-start-"));
  const script = { version: 1, thinking: false, failure_rate: 0, tasks: [{ name: "look", match: "Look at the page", steps: [{ finish: "Looked." }] }] };
  sim = await startPolicySimulator({ seed: 1, script: script as never });
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir: join(root, "data"), adminToken: ADMIN, mode: "train", healthIntervalMs: 0 });
});

afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
  rmSync(root, { recursive: true, force: true });
});

async function register(harness: string) {
  const response = await fetch(`${proxy.url}/control/rollouts`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify({ experiment: "gui-mcp-start", task_id: `slow-mcp-${harness}` }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as { rollout_id: string; openai_base_url: string; anthropic_base_url: string; api_key: string };
}

/** The tool names of the rollout's first recorded call, from its rebuilt request body. */
async function firstCallTools(rolloutId: string): Promise<string[]> {
  const calls: ModelCall[] = [];
  for await (const { record } of readRecords(join(root, "data", "log"))) {
    if (record.kind.case === "modelCall" && record.kind.value.rolloutId === rolloutId) calls.push(record.kind.value);
  }
  expect(calls.length).toBeGreaterThan(0);
  const store = createContentStore();
  const bodies = calls.map((call) => JSON.parse(new TextDecoder().decode(requestBodyOf(call, store))) as { tools?: Tool[] });
  // The agent's first turn: the first call that offers tools (opencode's title call offers none).
  const first = bodies.find((body) => (body.tools ?? []).length > 0);
  return namesOf(first?.tools ?? []);
}

/** Chat's function.name, Messages' and Responses' name; codex puts an MCP server's tools in a Responses namespace. */
type Tool = { name?: string; function?: { name: string }; tools?: Tool[] };
function namesOf(tools: Tool[], prefix = ""): string[] {
  return tools.flatMap((tool) => {
    const name = `${prefix}${tool.name ?? tool.function?.name ?? ""}`;
    return tool.tools ? namesOf(tool.tools, `${name}__`) : [name];
  });
}

describe("a slow browser MCP server still reaches the first call", () => {
  for (const harness of HARNESSES) {
    const why = harnessUnavailable(harness);
    test.skipIf(missingTools.length > 0 || why !== undefined)(
      `${harness}: the first call offers the browser's tools though the server starts ${DELAY_S} s late`,
      async () => {
        const reg = await register(harness);
        const dir = join(root, harness);
        const homeDir = join(dir, "home");
        const workspace = join(dir, "workspace");
        mkdirSync(homeDir, { recursive: true });
        mkdirSync(workspace, { recursive: true });
        // The real server, as a browser task gets it, started late by a shell in front of it.
        const server = browserMcpServer({ settings: DEFAULT_BROWSER_SETTINGS, outputDir: join(homeDir, ".playwright-mcp"), chromiumSandbox: false });
        const slow = { name: server.name, command: "/bin/sh", args: ["-c", `sleep ${DELAY_S}; exec "$0" "$@"`, server.command, ...server.args] };
        const launch = launchHarness(harness, {
          baseUrlOpenAI: reg.openai_base_url,
          baseUrlAnthropic: reg.anthropic_base_url,
          apiKey: reg.api_key,
          model: "forge-sim/qwen3-sim",
          workspace,
          homeDir,
          prompt: "Look at the page and say what it shows.",
          mcpServers: [slow],
        });
        for (const file of launch.files) {
          mkdirSync(dirname(file.path), { recursive: true });
          writeFileSync(file.path, file.content);
        }
        const proc = Bun.spawn(launch.command, { cwd: workspace, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...launch.env }, stdout: "pipe", stderr: "pipe" });
        const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
        const tools = await firstCallTools(reg.rollout_id);
        if (!tools.some((name) => name.endsWith("browser_navigate"))) {
          throw new Error(`${harness} (exit ${code}) sent its first call without the browser's tools: ${tools.join(", ")}\n${out.slice(-800)}\n${err.slice(-800)}`);
        }
      },
      SLOW,
    );
  }
});
