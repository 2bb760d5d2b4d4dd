import { expect, test } from "bun:test";
import { parseExperimentText } from "../schemas/index.ts";
import { renderProxyDeployment } from "./argo/index.ts";
import { simulatorToolParser, tokenInFlags, tokenInFor } from "./token-mode.ts";

const experiment = (policy: string) =>
  parseExperimentText(
    `apiVersion: openforge.dev/v1\nkind: Experiment\nmetadata: { name: x }\nspec:\n  policy:\n    model: m\n    mode: train\n${policy}\n  harness: { name: codex }\n  environment: { tasks: ./tasks }\n`,
    "x.yaml",
  );

test("engine mode: no flags, no options", async () => {
  const policy = experiment("").spec.policy;
  expect(tokenInFlags(policy)).toEqual([]);
  expect(await tokenInFor(policy)).toEqual({});
});

test("token-in without upstreams: the Qwen3 OpenForge ships, the defaults", async () => {
  const policy = experiment("    tokenMode: token-in").spec.policy;
  expect(tokenInFlags(policy)).toEqual(["--token-in", "--model-dir", "qwen3"]);
  const { tokenIn } = await tokenInFor(policy);
  expect([tokenIn!.model.toolParser, tokenIn!.model.reasoningParser, tokenIn!.maxModelLen]).toEqual(["hermes", "qwen3", undefined]);
  expect(simulatorToolParser(policy)).toBe("hermes");
});

test("tokenIn.route: the generate route reaches the proxy's options; another value is refused naming the field", async () => {
  const { tokenIn } = await tokenInFor(experiment("    tokenMode: token-in\n    tokenIn: { route: generate }").spec.policy);
  expect(tokenIn!.route).toBe("generate");
  expect(() => experiment("    tokenMode: token-in\n    tokenIn: { route: chat }")).toThrow(/route.*expected "auto" .*"completions" or "generate"/);
});

test("qwen3-coder: its parsers by default, and the simulator plays it; a simulator set to qwen3_coder makes it the default model", async () => {
  for (const policyText of ["    tokenMode: token-in\n    tokenIn: { modelDir: qwen3-coder }", "    tokenMode: token-in\n    simulator: { toolCallParser: qwen3_coder }"]) {
    const e = experiment(policyText);
    expect(tokenInFlags(e.spec.policy)).toEqual(["--token-in", "--model-dir", "qwen3-coder"]);
    const { tokenIn } = await tokenInFor(e.spec.policy);
    expect([tokenIn!.model.toolParser, tokenIn!.model.reasoningParser]).toEqual(["qwen3_coder", null]);
    expect(simulatorToolParser(e.spec.policy)).toBe("qwen3_coder");
    // On Argo the simulator container is started as that server too.
    const sim = renderProxyDeployment(e, "ns").spec!.template.spec!.containers.find((c) => c.name === "policy-sim")!;
    expect(sim.args!.join(" ")).toContain("--tool-call-parser qwen3_coder");
  }
  // Engine mode: the simulator's setting alone.
  expect(simulatorToolParser(experiment("    simulator: { toolCallParser: qwen3_coder }").spec.policy)).toBe("qwen3_coder");
  expect(() => experiment("    simulator: { toolCallParser: mistral }")).toThrow(/toolCallParser.*expected "hermes" or "qwen3_coder"/);
});

test("token-in with a served model: its directory, parsers and length reach the Argo proxy's arguments; a bad directory names the experiment field", async () => {
  const e = experiment("    upstreams: [http://gpu:8000/v1]\n    tokenMode: token-in\n    tokenIn: { modelDir: /models/q, toolParser: qwen3_coder, reasoningParser: none, maxModelLen: 4096, route: generate }");
  const flags = ["--token-in", "--model-dir", "/models/q", "--tool-call-parser", "qwen3_coder", "--reasoning-parser", "none", "--max-model-len", "4096", "--token-in-route", "generate"];
  expect(tokenInFlags(e.spec.policy)).toEqual(flags);
  const args = renderProxyDeployment(e, "ns").spec!.template.spec!.containers[0]!.args!;
  expect(args.join(" ")).toContain(flags.join(" "));
  await expect(tokenInFor(e.spec.policy)).rejects.toThrow(/spec\.policy\.tokenIn\.modelDir: \/models\/q\/tokenizer.json is missing/);
});
