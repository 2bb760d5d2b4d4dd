import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startRolloutSite } from "./rollout-site.ts";
import { startSiteServer, type SiteRequest } from "./site-server.ts";

const scratch = mkdtempSync(join(tmpdir(), "forge-site-test-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function site(name: string): string {
  const root = join(scratch, name, "site");
  mkdirSync(join(root, "sub"), { recursive: true });
  writeFileSync(join(root, "index.html"), "<h1>home</h1>");
  writeFileSync(join(root, "thanks.html"), "<h1>thanks</h1>");
  writeFileSync(join(root, "sub", "index.html"), "<h1>sub</h1>");
  writeFileSync(join(scratch, name, "secret.txt"), "not for the agent");
  symlinkSync(join(scratch, name, "secret.txt"), join(root, "leak.txt"));
  return root;
}
const lines = (log: string): SiteRequest[] => readFileSync(log, "utf8").trim().split("\n").filter(Boolean).map((line) => JSON.parse(line));

describe("the site server", () => {
  test("serves the site's files, a directory's index.html, and nothing outside it (.., encoded .., a link out)", async () => {
    const server = await startSiteServer({ root: site("files"), stateDir: join(scratch, "files", "state") });
    try {
      expect(await (await fetch(`${server.url}/`)).text()).toBe("<h1>home</h1>");
      expect(await (await fetch(`${server.url}/sub/`)).text()).toBe("<h1>sub</h1>");
      expect((await fetch(`${server.url}/sub/`)).headers.get("cache-control")).toBe("no-store");
      for (const path of ["/../secret.txt", "/%2e%2e/secret.txt", "/leak.txt", "/missing.html", "/a%00b"]) {
        const response = await fetch(`${server.url}${path}`);
        expect(response.status).toBe(404);
        expect(await response.text()).not.toContain("not for the agent");
      }
    } finally {
      await server.close();
    }
  });

  test("records every request: form fields, JSON bodies, query, user agent; a POST answers the page at its path or {ok: true}", async () => {
    const server = await startSiteServer({ root: site("log"), stateDir: join(scratch, "log", "state") });
    try {
      const form = await fetch(`${server.url}/thanks.html?from=home`, { method: "POST", body: new URLSearchParams([["email", "a@b.c"], ["tag", "x"], ["tag", "y"]]), headers: { "user-agent": "HeadlessChrome/156" } });
      expect(await form.text()).toBe("<h1>thanks</h1>");
      const api = await fetch(`${server.url}/api/cart`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ add: "blue-mug" }) });
      expect(await api.json()).toEqual({ ok: true });
      await fetch(`${server.url}/api/raw`, { method: "PUT", body: "plain words" });
      await fetch(`${server.url}/api/bad-json`, { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" });
    } finally {
      await server.close();
    }
    const [form, api, raw, bad] = lines(server.log);
    expect(form).toMatchObject({ seq: 1, method: "POST", path: "/thanks.html", query: { from: "home" }, user_agent: "HeadlessChrome/156", form: { email: "a@b.c", tag: "y" }, form_all: { email: ["a@b.c"], tag: ["x", "y"] }, status: 200 });
    expect(api).toMatchObject({ seq: 2, path: "/api/cart", json: { add: "blue-mug" } });
    expect(raw).toMatchObject({ method: "PUT", text: "plain words" });
    expect(bad).toMatchObject({ text: "{nope" });
  });

  test("sandboxed rollouts get it on a unix socket at a fixed inner port (the next free one when proxies have it), cleaned up on close", async () => {
    const root = site("socket");
    const rollout = await startRolloutSite({ siteDir: root, stateDir: join(scratch, "socket", "state"), sandboxed: true, takenPorts: [8000, 8001] });
    expect(rollout.url).toBe("http://127.0.0.1:8002");
    const response = await fetch("http://site/", { unix: rollout.bridge!.socket } as RequestInit);
    expect(await response.text()).toBe("<h1>home</h1>");
    await rollout.close();
    expect(() => readFileSync(rollout.bridge!.socket)).toThrow();
    const plain = await startRolloutSite({ siteDir: root, stateDir: join(scratch, "socket", "state2"), sandboxed: false });
    expect(plain.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(plain.bridge).toBeUndefined();
    await plain.close();
  });
});
