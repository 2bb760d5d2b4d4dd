/**
 * `forge policy-sim`: serves the policy simulator (a stand-in for the model) until Ctrl-C.
 */
import { intFlag, parseCommand, untilSignal, UsageError } from "../lib/index.ts";
import { parsePolicyScriptFile, PolicyScriptError } from "../schemas/index.ts";
import { startPolicySimulator } from "./server.ts";
import { DEFAULT_SIM_MODEL } from "./options.ts";
import { SIM_TOOL_PARSERS, type SimToolParser } from "./model.ts";

const usage = `
usage: forge policy-sim [--listen HOST:PORT] [--seed N] [--script FILE] [--model ID]
                        [--chunk-delay-ms N] [--ttft-ms N] [--tokens-per-chunk N] [--quiet]
                        [--engine vllm|sglang] [--tool-call-parser hermes|qwen3_coder]

Serves an OpenAI-compatible API that behaves like vLLM serving Qwen3 (real Qwen3 token ids,
logprobs, tool calls, return_token_ids), playing a scripted policy. It is a simulator: it stands
in for the model in tests and the quickstart.

  --listen HOST:PORT       address to bind (default 127.0.0.1:8000; port 0 picks a free one)
  --seed N                 seed of everything sampled (default 0)
  --script FILE            policy script (YAML, see examples/policies/quickstart.yaml)
  --model ID               model id served (default ${DEFAULT_SIM_MODEL})
  --chunk-delay-ms N       delay between stream chunks (default 0)
  --ttft-ms N              delay before the first token (default 0)
  --tokens-per-chunk N     tokens per stream chunk (default 1)
  --engine vllm|sglang     the engine it stands in for: wire format, errors, discovery and
                           weight-sync routes of vLLM 0.33.0 (default) or SGLang 0.5.23 (docs/engines.md)
  --tool-call-parser P     the served model as vLLM is started with --tool-call-parser P:
                           hermes (default: Qwen3, <tool_call> JSON, thinking) or qwen3_coder
                           (Qwen3-Coder: its own chat template, XML tool calls, no thinking)
  --quiet                  no per-request log lines
  --json                   print {"url", "openai_base_url", "model"} as one JSON line once listening
`;

/**
 * @example
 * await policySimCommand(["--listen", "127.0.0.1:0", "--seed", "3"]);
 */
export async function policySimCommand(argv: string[]): Promise<number> {
  const args = parseCommand(
    {
      name: "policy-sim",
      usage,
      options: {
        listen: { type: "string" },
        seed: { type: "string" },
        script: { type: "string" },
        model: { type: "string" },
        "chunk-delay-ms": { type: "string" },
        "ttft-ms": { type: "string" },
        "tokens-per-chunk": { type: "string" },
        quiet: { type: "boolean" },
        engine: { type: "string" },
        "tool-call-parser": { type: "string" },
        json: { type: "boolean" },
      },
    },
    argv,
  );
  if (!args) return 0;
  const { hostname, port } = parseListen(args.values.listen ?? "127.0.0.1:8000");
  const tokensPerChunk = intFlag("tokens-per-chunk", args.values["tokens-per-chunk"], 1);
  if (tokensPerChunk < 1) throw new UsageError("--tokens-per-chunk must be at least 1");
  const engine = args.values.engine ?? "vllm";
  if (engine !== "vllm" && engine !== "sglang") throw new UsageError(`--engine must be vllm or sglang, got "${engine}"`);
  const toolCallParser = args.values["tool-call-parser"] ?? "hermes";
  if (!(SIM_TOOL_PARSERS as readonly string[]).includes(toolCallParser)) throw new UsageError(`--tool-call-parser must be one of ${SIM_TOOL_PARSERS.join(", ")}, got "${toolCallParser}"`);
  if (args.values.script !== undefined) {
    // A missing or invalid script is the caller's mistake (exit 2), found before the tokenizer loads.
    try {
      parsePolicyScriptFile(args.values.script);
    } catch (error) {
      if (error instanceof PolicyScriptError) throw new UsageError(`forge policy-sim: --script ${error.message}`);
      throw error;
    }
  }
  const started = performance.now();
  // Loading the tokenizer takes about a second: say what is happening.
  if (!args.values.json) console.error("policy simulator: loading the Qwen3 tokenizer...");
  const model = args.values.model ?? DEFAULT_SIM_MODEL;
  const sim = await startPolicySimulator({
    seed: intFlag("seed", args.values.seed, 0),
    script: args.values.script,
    model,
    chunkDelayMs: intFlag("chunk-delay-ms", args.values["chunk-delay-ms"], 0),
    ttftMs: intFlag("ttft-ms", args.values["ttft-ms"], 0),
    tokensPerChunk,
    engine,
    toolCallParser: toolCallParser as SimToolParser,
    hostname,
    port,
    log: args.values.quiet ? undefined : (line) => console.error(line),
  });
  if (args.values.json) console.log(JSON.stringify({ url: sim.url, openai_base_url: `${sim.url}/v1`, model, engine, simulator: true }));
  else console.log(`policy simulator (a stand-in for the model, not a model) listening on ${sim.url}/v1 (ready in ${Math.round(performance.now() - started)} ms)`);
  const signal = await untilSignal();
  console.error(`policy simulator: ${signal}, stopping`);
  await sim.stop();
  return 0;
}

function parseListen(listen: string): { hostname: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(listen);
  if (!match) throw new UsageError(`--listen must be HOST:PORT (e.g. 127.0.0.1:8000), got "${listen}"`);
  const port = Number(match[2]);
  if (port > 65535) throw new UsageError(`--listen: port ${port} is out of range`);
  return { hostname: match[1]!.replace(/^\[|\]$/g, ""), port };
}
