import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadTaskDir, TaskError } from "../tasks/index.ts";
import { browserMcpServer, BrowserSetupError, DEFAULT_BROWSER_SETTINGS, playwrightMcpPackages } from "./browser.ts";

const scratch = mkdtempSync(join(tmpdir(), "forge-browser-test-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("the browser's MCP server", () => {
  test("@playwright/mcp and the Playwright packages it loads are installed (bun install), each bound read-only into the sandbox", () => {
    const { cli, dirs } = playwrightMcpPackages();
    expect(existsSync(cli)).toBe(true);
    expect(dirs.map((dir) => dir.split("/node_modules/").at(-1))).toEqual(["@playwright/mcp", "playwright", "playwright-core"]);
  });

  test("headless, in-memory profile, vision tools, the viewport, output out of the workspace; --no-sandbox only when asked", () => {
    const settings = { ...DEFAULT_BROWSER_SETTINGS, executablePath: "/opt/chrome/chrome" };
    const server = browserMcpServer({ settings, outputDir: "/home/r/.playwright-mcp", chromiumSandbox: false, node: "/usr/bin/node" });
    expect(server.name).toBe("browser");
    expect(server.command).toBe("/usr/bin/node");
    expect(server.args.slice(1)).toEqual(["--headless", "--isolated", "--executable-path", "/opt/chrome/chrome", "--caps", "vision", "--viewport-size", "1280x720", "--output-dir", "/home/r/.playwright-mcp", "--image-responses", "allow", "--no-sandbox"]);
    expect(browserMcpServer({ settings, outputDir: "/o", chromiumSandbox: true, node: "/usr/bin/node" }).args).not.toContain("--no-sandbox");
  });

  test("a bad viewport or a missing Chromium is an error saying what to set or install", () => {
    expect(() => browserMcpServer({ settings: { viewport: "big" }, outputDir: "/o", chromiumSandbox: false, node: "/usr/bin/node" })).toThrow(BrowserSetupError);
    const path = process.env.PATH;
    process.env.PATH = "/nonexistent";
    try {
      expect(() => browserMcpServer({ settings: DEFAULT_BROWSER_SETTINGS, outputDir: "/o", chromiumSandbox: false, node: "/usr/bin/node" })).toThrow(/no Chromium found on PATH .*executablePath/);
    } finally {
      process.env.PATH = path;
    }
  });
});

describe("browser tasks on disk", () => {
  const task = (name: string, files: Record<string, string>) => {
    const dir = join(scratch, name);
    for (const [path, content] of Object.entries({ "tests/test.sh": "echo 1 > $FORGE_LOGS/reward.txt", ...files })) {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
    return dir;
  };

  test("[environment] browser and site/ are read; the site stays out of the workspace's environment", () => {
    const loaded = loadTaskDir(task("shop", { "instruction.md": "Open {site_url}", "task.toml": "[environment]\nbrowser = true\n", "site/index.html": "<h1>shop</h1>" }));
    expect(loaded.browser).toBe(true);
    expect(loaded.siteDir).toBe(join(scratch, "shop", "site"));
    expect(loaded.environmentDir).toBeUndefined();
    expect(loadTaskDir(task("plain", { "instruction.md": "hi" })).browser).toBe(false);
  });

  test("a site without index.html, {site_url} without a site, and a browser key that is not a boolean are refused", () => {
    expect(() => loadTaskDir(task("noindex", { "instruction.md": "Open {site_url}", "site/other.html": "x" }))).toThrow(/site\/index.html is missing/);
    expect(() => loadTaskDir(task("nosite", { "instruction.md": "Open {site_url}" }))).toThrow(/uses \{site_url\} but the task has no site\//);
    expect(() => loadTaskDir(task("badkey", { "instruction.md": "x", "task.toml": '[environment]\nbrowser = "yes"\n' }))).toThrow(TaskError);
  });
});
