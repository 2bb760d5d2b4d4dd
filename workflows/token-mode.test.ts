import { expect, test } from "bun:test";
import { parseExperimentText } from "../schemas/index.ts";
import { renderProxyDeployment } from "./argo/index.ts";
import { tokenInFlags, tokenInFor } from "./token-mode.ts";

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
  expect(tokenInFlags(policy)).toEqual(["--token-in", "--model-dir", "qwen3", "--tool-call-parser", "hermes", "--reasoning-parser", "qwen3"]);
  const { tokenIn } = await tokenInFor(policy);
  expect([tokenIn!.model.toolParser, tokenIn!.model.reasoningParser, tokenIn!.maxModelLen]).toEqual(["hermes", "qwen3", undefined]);
});

test("token-in with a served model: its directory, parsers and length reach the Argo proxy's arguments; a bad directory names the experiment field", async () => {
  const e = experiment("    upstreams: [http://gpu:8000/v1]\n    tokenMode: token-in\n    tokenIn: { modelDir: /models/q, toolParser: qwen3_coder, reasoningParser: none, maxModelLen: 4096 }");
  const flags = ["--token-in", "--model-dir", "/models/q", "--tool-call-parser", "qwen3_coder", "--reasoning-parser", "none", "--max-model-len", "4096"];
  expect(tokenInFlags(e.spec.policy)).toEqual(flags);
  const args = renderProxyDeployment(e, "ns").spec!.template.spec!.containers[0]!.args!;
  expect(args.join(" ")).toContain(flags.join(" "));
  await expect(tokenInFor(e.spec.policy)).rejects.toThrow(/spec\.policy\.tokenIn\.modelDir: \/models\/q\/tokenizer.json is missing/);
});
