/** `forge proxy` and `forge demo` as a user runs them. */
import { describe, expect, test } from "bun:test";

const forge = async (...argv: string[]) => {
  const child = Bun.spawn(["bun", "bin/forge.ts", ...argv], { stdout: "pipe", stderr: "pipe", env: { ...process.env, FORGE_ADMIN_TOKEN: "" } });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { stdout, stderr, code };
};

describe("forge proxy", () => {
  test("--help prints the flags; bad usage exits 2 naming the flag", async () => {
    const help = await forge("proxy", "--help");
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("--upstream URL");
    const missing = await forge("proxy", "--data", "/tmp/x");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--upstream URL is required");
    const mode = await forge("proxy", "--upstream", "http://127.0.0.1:1/v1", "--data", "/tmp/x", "--mode", "fast");
    expect(mode.code).toBe(2);
    expect(mode.stderr).toContain("--mode must be train or eval");
    const listen = await forge("proxy", "--upstream", "http://127.0.0.1:1/v1", "--data", "/tmp/x", "--listen", "nowhere");
    expect(listen.code).toBe(2);
    expect(listen.stderr).toContain("HOST:PORT");
  });
});

describe("forge demo", () => {
  test("sends one recorded streaming call and prints its record", async () => {
    const { stdout, code, stderr } = await forge("demo", "--json");
    expect(code, stderr).toBe(0);
    const summary = JSON.parse(stdout.trim().split("\n").at(-1)!);
    expect(summary).toMatchObject({ seq: 1, status: "OK", stream: true, token_status: "COMPLETE", policy_version: 0 });
    expect(summary.prompt_tokens).toBeGreaterThan(0);
    expect(summary.completion_tokens).toBe(summary.logprobs);
  });
});
