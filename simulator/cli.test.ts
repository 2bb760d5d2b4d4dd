import { expect, test } from "bun:test";
import { policySimCommand } from "./cli.ts";
import { UsageError } from "../lib/index.ts";

const runner = `import { policySimCommand } from "${import.meta.dir}/cli.ts"; process.exitCode = await policySimCommand(JSON.parse(process.env.SIM_ARGS));`;

test("forge policy-sim prints its URL, serves, and stops on SIGTERM", { timeout: 30_000 }, async () => {
  const args = ["--listen", "127.0.0.1:0", "--seed", "4", "--script", `${import.meta.dir}/../examples/policies/quickstart.yaml`, "--quiet"];
  const proc = Bun.spawn(["bun", "-e", runner], {
    env: { ...process.env, SIM_ARGS: JSON.stringify(args) },
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = proc.stdout.getReader();
  let out = "";
  while (!/listening on (\S+)/.test(out)) {
    const { value, done } = await reader.read();
    if (done) break;
    out += new TextDecoder().decode(value);
  }
  const url = /listening on (\S+)/.exec(out)?.[1];
  expect(out).toContain("policy simulator");
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  const res = await fetch(`${url}/chat/completions`, { method: "POST", body: JSON.stringify({ messages: [{ role: "user", content: "What is the capital of France?" }] }) });
  const body = (await res.json()) as { choices: { message: { content: string } }[] };
  expect(body.choices[0]!.message.content).toMatch(/capital of France is (Paris|Lyon)/);
  proc.kill("SIGTERM");
  expect(await proc.exited).toBe(0);
});

test("--json prints one JSON line with the URLs", { timeout: 30_000 }, async () => {
  const proc = Bun.spawn(["bun", "-e", runner], { env: { ...process.env, SIM_ARGS: JSON.stringify(["--listen", "127.0.0.1:0", "--json", "--quiet"]) }, stdout: "pipe", stderr: "pipe" });
  const reader = proc.stdout.getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    out += new TextDecoder().decode(value);
  }
  const info = JSON.parse(out) as { url: string; openai_base_url: string; model: string };
  expect(info.openai_base_url).toBe(`${info.url}/v1`);
  expect(info.model).toBe("forge-sim/qwen3-sim");
  expect((await fetch(`${info.url}/health`)).status).toBe(200);
  proc.kill("SIGINT");
  expect(await proc.exited).toBe(0);
});

test("bad flags are usage errors; a bad script names the file", { timeout: 30_000 }, async () => {
  await expect(policySimCommand(["--listen", "nowhere"])).rejects.toBeInstanceOf(UsageError);
  await expect(policySimCommand(["--seed", "x"])).rejects.toBeInstanceOf(UsageError);
  await expect(policySimCommand(["--script", "/nonexistent.yaml"])).rejects.toThrow(/\/nonexistent\.yaml/);
});
