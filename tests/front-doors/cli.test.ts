/**
 * The real harness CLIs through the front doors: Claude Code (Anthropic Messages) and Codex
 * (Responses API) run a one-tool-call task against the policy simulator, offline, through the
 * proxy. Skipped when the CLI is not installed (.ci/run installs both).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CallStatus, Protocol, TokenStatus } from "../../schemas/index.ts";
import { requestBodiesOf, startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";

let h: ProxyHarness;
const dirs: string[] = [];
beforeAll(async () => {
  h = await startProxyHarness({
    sim: { script: { version: 1, failure_rate: 0, tasks: [{ name: "hello", match: "hello.txt", steps: [{ write: { path: "hello.txt", content: "hi" } }, { finish: "Created hello.txt." }] }] } },
  });
});
afterAll(async () => {
  await h?.close();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempDir(prefix: string) {
  const d = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

async function run(cmd: string[], cwd: string, env: Record<string, string>) {
  const p = Bun.spawn(cmd, { cwd, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => p.kill(), 120_000);
  const [stdout, stderr] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  await p.exited;
  clearTimeout(timer);
  return { code: p.exitCode, out: `${stdout}\n${stderr}` };
}

async function expectCompleteRollout(rolloutId: string, protocol: Protocol) {
  const calls = await h.calls(rolloutId);
  expect(calls.length).toBeGreaterThanOrEqual(2);
  for (const c of calls) {
    expect(c.protocol).toBe(protocol);
    expect(c.status).toBe(CallStatus.OK);
    expect(c.tokenStatus).toBe(TokenStatus.COMPLETE);
  }
  return calls;
}

describe("real harness CLIs through the front doors", () => {
  test.skipIf(!Bun.which("claude"))("Claude Code over /v1/messages", async () => {
    const r = (await h.register({ harness: "claude-code" })) as any;
    const ws = await tempDir("forge-cc-ws-");
    const home = await tempDir("forge-cc-home-");
    const res = await run(["claude", "-p", "Create hello.txt containing exactly: hi", "--allowedTools", "Write,Read,Bash", "--model", "claude-sonnet-4-5"], ws, {
      HOME: home,
      ANTHROPIC_BASE_URL: r.anthropic_base_url,
      ANTHROPIC_API_KEY: r.api_key,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
    });
    expect(res.code, res.out).toBe(0);
    expect(await Bun.file(join(ws, "hello.txt")).text()).toBe("hi");
    const calls = await expectCompleteRollout(r.rollout_id, Protocol.ANTHROPIC_MESSAGES);
    // The tool_use id the harness received comes back in its tool_result, exactly.
    const firstSse = new TextDecoder().decode(calls[0]!.responseBody);
    const id = /"type":"tool_use","id":"([^"]+)"/.exec(firstSse)?.[1];
    expect(id).toBeDefined();
    expect(new TextDecoder().decode(requestBodiesOf(calls)[1]!)).toContain(`"tool_use_id":"${id}"`);
  }, 120_000); // a real CLI start: 2 s alone, longer beside the rest of the suite

  test.skipIf(!Bun.which("codex"))("Codex over /v1/responses", async () => {
    const r = await h.register({ harness: "codex" });
    const ws = await tempDir("forge-codex-ws-");
    const codexHome = await tempDir("forge-codex-home-");
    await Bun.write(
      join(codexHome, "config.toml"),
      [
        'model = "gpt-5-codex"',
        'model_provider = "forge"',
        "check_for_update_on_startup = false",
        "[model_providers.forge]",
        'name = "forge"',
        `base_url = "${r.openai_base_url}"`,
        'env_key = "FORGE_API_KEY"',
        'wire_api = "responses"',
        "[analytics]",
        "enabled = false",
        "[features]",
        "plugins = false",
        "",
      ].join("\n"),
    );
    const res = await run(["codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-C", ws, "Create hello.txt containing exactly: hi"], ws, {
      HOME: codexHome,
      CODEX_HOME: codexHome,
      FORGE_API_KEY: r.api_key,
    });
    expect(res.code, res.out).toBe(0);
    expect(await Bun.file(join(ws, "hello.txt")).text()).toBe("hi");
    const calls = await expectCompleteRollout(r.rollout_id, Protocol.RESPONSES);
    const firstSse = new TextDecoder().decode(calls[0]!.responseBody);
    const callId = /"type":"function_call"[^}]*"call_id":"([^"]+)"/.exec(firstSse)?.[1];
    expect(callId).toBeDefined();
    expect(new TextDecoder().decode(requestBodiesOf(calls)[1]!)).toContain(`"call_id":"${callId}"`);
  }, 120_000);
});
