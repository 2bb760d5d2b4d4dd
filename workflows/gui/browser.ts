/**
 * The browser a GUI rollout's harness drives: Playwright's MCP server (`@playwright/mcp`, pinned
 * in package.json) over stdio, in vision mode (`--caps vision`: coordinate clicks beside the
 * element tools; every `browser_take_screenshot` answers an MCP image part), running headless
 * Chromium with an in-memory profile. The harness adapter plugs it into the harness's own MCP
 * configuration (claude-code `--mcp-config`, codex `[mcp_servers]`, opencode `mcp`); it runs
 * inside the rollout's sandbox, offline: the only ports it reaches are the ones bridged in (the
 * proxy and the task's site).
 */
import { realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

/** `spec.environment.browser` of the experiment. */
export type BrowserSettings = {
  /** Chromium's binary; default the first of chromium, chromium-browser, google-chrome on PATH. */
  executablePath?: string;
  /** The viewport, `WIDTHxHEIGHT` in CSS pixels: the screenshots' size. */
  viewport: string;
};

export const DEFAULT_BROWSER_SETTINGS: BrowserSettings = { viewport: "1280x720" };

/** The MCP server a harness starts: a stdio command, and what the sandbox must show it. */
export type BrowserMcpServer = {
  /** The name the harness knows the server by: its tools become `mcp__browser__…` (claude-code, codex) or `browser_…` (opencode). */
  name: string;
  command: string;
  args: string[];
  /** Read-only paths the sandbox must bind for it to run (the packages, at their real paths). */
  readOnlyPaths: string[];
};

/** A browser cannot be set up here; the message says what to install or set. */
export class BrowserSetupError extends Error {
  override name = "BrowserSetupError";
}

const CHROMIUM_NAMES = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];

/**
 * The directories of `@playwright/mcp` and the Playwright packages it loads, as installed by
 * `bun install`.
 *
 * @example
 * playwrightMcpPackages().cli; // ".../node_modules/@playwright/mcp/cli.js"
 */
export function playwrightMcpPackages(): { cli: string; dirs: string[] } {
  let mcpPackage: string;
  try {
    mcpPackage = fileURLToPath(import.meta.resolve("@playwright/mcp/package.json"));
  } catch {
    throw new BrowserSetupError("@playwright/mcp is not installed: run `bun install` in the OpenForge checkout (package.json pins it)");
  }
  const require = createRequire(mcpPackage);
  const dirs = [dirname(mcpPackage)];
  for (const name of ["playwright", "playwright-core"]) {
    try {
      dirs.push(dirname(require.resolve(`${name}/package.json`)));
    } catch {
      throw new BrowserSetupError(`${name} (a dependency of @playwright/mcp) is not installed: run \`bun install\``);
    }
  }
  return { cli: `${dirname(mcpPackage)}/cli.js`, dirs };
}

/**
 * Chromium's binary: the experiment's, else the first found on PATH.
 *
 * @example
 * findChromium({ viewport: "1280x720" }); // "/usr/bin/chromium"
 */
export function findChromium(settings: BrowserSettings): string {
  if (settings.executablePath) return settings.executablePath;
  for (const name of CHROMIUM_NAMES) {
    const found = Bun.which(name, { PATH: process.env.PATH ?? "" });
    if (found) return found;
  }
  throw new BrowserSetupError(`no Chromium found on PATH (looked for ${CHROMIUM_NAMES.join(", ")}): apt-get install -y chromium, or set spec.environment.browser.executablePath`);
}

/**
 * The arguments of `node <cli> …` that start Playwright's MCP server: headless, in-memory
 * profile, vision tools, the viewport, Playwright's files in `outputDir`, images in tool
 * results, and `--no-sandbox` where Chromium's own sandbox cannot run. Shared by the local
 * executor (browserMcpServer) and the Argo rollout pod (workflows/argo/gui.ts), so a task's
 * browser is the same on both.
 *
 * @example
 * browserMcpArgs({ cli: "/app/node_modules/@playwright/mcp/cli.js", executablePath: "/usr/bin/chromium", viewport: "1280x720", outputDir: "/forge/home/.playwright-mcp", chromiumSandbox: false }).at(-1); // "--no-sandbox"
 */
export function browserMcpArgs(options: { cli: string; executablePath: string; viewport: string; outputDir: string; chromiumSandbox: boolean }): string[] {
  if (!/^\d+x\d+$/.test(options.viewport)) throw new BrowserSetupError(`spec.environment.browser.viewport: expected WIDTHxHEIGHT (e.g. 1280x720), got ${JSON.stringify(options.viewport)}`);
  return [
    options.cli,
    "--headless",
    "--isolated",
    "--executable-path",
    options.executablePath,
    "--caps",
    "vision",
    "--viewport-size",
    options.viewport,
    "--output-dir",
    options.outputDir,
    "--image-responses",
    "allow",
    ...(options.chromiumSandbox ? [] : ["--no-sandbox"]),
  ];
}

/**
 * The MCP server for one rollout. `profileDir` takes Playwright's output files (screenshots,
 * snapshots), kept out of the workspace the verifier reads; `chromiumSandbox: false` passes
 * `--no-sandbox`, needed inside bwrap (no user namespaces left for Chromium's own sandbox, which
 * the rollout's sandbox replaces) and as root.
 *
 * @example
 * const server = browserMcpServer({ settings: DEFAULT_BROWSER_SETTINGS, outputDir: "/rollout/home/.playwright-mcp", chromiumSandbox: false });
 * server.args; // [".../cli.js", "--headless", "--isolated", ..., "--caps", "vision", ...]
 */
export function browserMcpServer(options: { settings: BrowserSettings; outputDir: string; chromiumSandbox: boolean; node?: string }): BrowserMcpServer {
  const { cli, dirs } = playwrightMcpPackages();
  const node = options.node ?? Bun.which("node", { PATH: process.env.PATH ?? "" });
  if (!node) throw new BrowserSetupError("node is not on PATH: @playwright/mcp runs on Node ≥ 18 (apt-get install -y nodejs)");
  const args = browserMcpArgs({ cli, executablePath: findChromium(options.settings), viewport: options.settings.viewport, outputDir: options.outputDir, chromiumSandbox: options.chromiumSandbox });
  // A node outside the system directories (nvm, a tarball) must be bound into the sandbox too.
  const nodeDir = dirname(realpathSync(node));
  const system = ["/usr/", "/opt/", "/bin/", "/sbin/", "/lib"].some((prefix) => `${nodeDir}/`.startsWith(prefix));
  return { name: "browser", command: node, args, readOnlyPaths: [...dirs, ...(system ? [] : [nodeDir])] };
}
