/**
 * The engine-request suite: every body the proxy sends an inference engine validates against the
 * engine's own request models at the pinned versions (vLLM 0.33.0, SGLang 0.5.23, real pydantic
 * and msgspec types through the reference oracle), and the proxy adds no field the real server
 * would reject or silently ignore. The bodies: Chat and Completions from harnesses (streamed and
 * not, in train mode as each engine's adapter rewrites them, and as sent in eval mode), the
 * Anthropic Messages and Responses doors' translations, the start-up probe, the token-id
 * requests of token-in mode (vLLM `/v1/completions` with a token prompt, SGLang's native
 * `/generate`; with images, SGLang's `/generate` with `image_data` and vLLM's
 * `/inference/v1/generate` GenerateRequest with `content_parts`), and the weight-sync calls where
 * the server defines a type (SGLang's io_struct).
 * Prints how many bodies it checked.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { versionCall } from "../../proxy/index.ts";
import { DEFAULT_FRONT_DOORS, adapterFor, loadCalls, sglangGenerateRequest, vllmTokenCompletionRequest } from "../../proxy/testing.ts";
import { engineRequest } from "../../proxy/token-in/engine-request.ts";
import { solidPng } from "../../model/testing.ts";
import { sglangNativeSkipReason, startOracle, type Oracle } from "./oracle.ts";

// Importing vLLM and SGLang takes tens of seconds on a loaded 2-core machine.
const SLOW = 300_000;

// SGLang's native request types (GenerateReqInput, io_struct) import only in the opt-in second venv.
const nativeSkip = sglangNativeSkipReason();
if (nativeSkip) console.log(`engine-request suite: SGLang's GenerateReqInput and weight-sync types ${nativeSkip}`);

let reference: Oracle;
let native: Oracle;
beforeAll(async () => {
  [reference, native] = await Promise.all([startOracle(), nativeSkip ? undefined : startOracle({ venv: "sglang-native" })]) as [Oracle, Oracle];
}, SLOW);
afterAll(async () => {
  await Promise.all([reference?.close(), native?.close()]);
  console.log(`engine-request suite: ${checked} bodies validated against vLLM 0.33.0's and SGLang 0.5.23's request models`);
});

let checked = 0;
type Verdict = { ok: boolean; errors?: unknown; ignored_keys: string[]; extra_paths?: string[]; extra: string };

async function validate(model: string, body: Record<string, unknown>): Promise<Verdict> {
  const oracle = model === "sglang.GenerateReqInput" || model.endsWith("ReqInput") ? native : reference;
  const answer = await oracle.call({ op: "validate", model, body });
  if (answer.error) throw new Error(`oracle: ${answer.error}`);
  return answer as Verdict;
}

/** Every key the model would not read: top-level keys it does not know and keys kept as extras anywhere. */
const unread = (v: Verdict) => [...new Set([...v.ignored_keys, ...(v.extra_paths ?? [])])].sort();

/** Checks `sent` against `model`: valid, and nothing unread beyond what the harness itself sent. */
async function expectAccepted(model: string, sent: Record<string, unknown>, harness?: Record<string, unknown>) {
  const v = await validate(model, sent);
  checked++;
  if (!v.ok) throw new Error(`${model} rejects the body the proxy sends: ${JSON.stringify(v.errors)}\n${JSON.stringify(sent)}`);
  const own = harness ? unread(await validate(model, harness)) : [];
  const added = unread(v).filter((k) => !own.includes(k));
  expect({ model, unread: added }).toEqual({ model, unread: [] });
}

const tools = [
  { type: "function", function: { name: "bash", description: "Run a command", parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } } },
];

/** Chat bodies as harnesses send them (only fields both engines model: the harness's own unread keys are not the proxy's). */
const CHAT: Record<string, Record<string, unknown>> = {
  plain: { model: "qwen3", messages: [{ role: "user", content: "hi" }] },
  "tools, streamed": {
    model: "qwen3",
    messages: [
      { role: "system", content: "You are an agent." },
      { role: "user", content: "list files" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "bash", arguments: '{"command": "ls"}' } }] },
      { role: "tool", tool_call_id: "call_1", content: "a.txt" },
    ],
    tools,
    tool_choice: "auto",
    stream: true,
  },
  "streamed with usage, sampling set": {
    model: "qwen3",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
    stream_options: { include_usage: true },
    temperature: 0.7,
    top_p: 0.9,
    seed: 3,
    max_completion_tokens: 64,
    stop: ["\n\n"],
  },
  "logprobs asked by the harness": { model: "qwen3", messages: [{ role: "user", content: "hi" }], logprobs: true, top_logprobs: 2 },
  "thinking off": { model: "qwen3", messages: [{ role: "user", content: "hi" }], chat_template_kwargs: { enable_thinking: false }, max_tokens: 32 },
};

const COMPLETIONS: Record<string, Record<string, unknown>> = {
  text: { model: "qwen3", prompt: "Once upon a time", max_tokens: 16 },
  "text, streamed": { model: "qwen3", prompt: "Once upon a time", max_tokens: 16, stream: true },
  "token ids, streamed": { model: "qwen3", prompt: [151644, 872, 198], max_tokens: 8, stream: true, stream_options: { include_usage: true } },
  echo: { model: "qwen3", prompt: "Echo", max_tokens: 4, echo: true, logprobs: 1 },
};

const ANTHROPIC = {
  model: "qwen3",
  max_tokens: 256,
  system: "You are an agent.",
  tools: [{ name: "bash", description: "Run a command", input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } }],
  messages: [
    { role: "user", content: "list files" },
    { role: "assistant", content: [{ type: "text", text: "Listing." }, { type: "tool_use", id: "toolu_1", name: "bash", input: { command: "ls" } }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "a.txt" }] },
  ],
  temperature: 0.5,
  stream: true,
};

const RESPONSES = {
  model: "qwen3",
  instructions: "You are an agent.",
  input: [
    { role: "user", content: [{ type: "input_text", text: "list files" }] },
    { type: "function_call", call_id: "call_1", name: "bash", arguments: '{"command":"ls"}' },
    { type: "function_call_output", call_id: "call_1", output: "a.txt" },
  ],
  tools: [{ type: "function", name: "bash", description: "Run a command", parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } }],
  max_output_tokens: 256,
  stream: true,
};

const door = (name: string) => DEFAULT_FRONT_DOORS.find((d) => d.name === name)!;

for (const engine of ["vllm", "sglang"] as const) {
  const adapter = adapterFor(engine);
  const chatModel = `${engine}.ChatCompletionRequest`;
  const completionModel = `${engine}.CompletionRequest`;

  describe(`${engine}: what the proxy sends`, () => {
    test(
      "chat from harnesses, as sent in eval mode and as the train-mode adapter rewrites it",
      async () => {
        for (const [, body] of Object.entries(CHAT)) {
          const prepared = door("chat").prepare(structuredClone(body));
          await expectAccepted(chatModel, prepared.upstreamBody, body);
          await expectAccepted(chatModel, adapter.trainRequest("chat", prepared.upstreamBody), body);
        }
      },
      SLOW,
    );

    test(
      "completions from harnesses, text and token-id prompts, streamed and not",
      async () => {
        for (const [, body] of Object.entries(COMPLETIONS)) {
          const prepared = door("completions").prepare(structuredClone(body));
          await expectAccepted(completionModel, prepared.upstreamBody, body);
          await expectAccepted(completionModel, adapter.trainRequest("completions", prepared.upstreamBody), body);
        }
      },
      SLOW,
    );

    test(
      "Anthropic Messages and Responses translated to Chat: the whole body is the proxy's, every field read",
      async () => {
        for (const [name, body] of [
          ["anthropic_messages", ANTHROPIC],
          ["responses", RESPONSES],
        ] as const) {
          for (const stream of [true, false]) {
            const prepared = door(name).prepare({ ...structuredClone(body), stream } as Record<string, any>);
            await expectAccepted(chatModel, prepared.upstreamBody);
            await expectAccepted(chatModel, adapter.trainRequest("chat", prepared.upstreamBody));
          }
        }
      },
      SLOW,
    );

    test(
      "the start-up probe, not streamed and streamed",
      async () => {
        for (const stream of [false, true]) {
          await expectAccepted(chatModel, adapter.trainRequest("chat", { model: "qwen3", messages: [{ role: "user", content: "Reply with one word." }], max_tokens: 1, ...(stream ? { stream } : {}) }));
        }
      },
      SLOW,
    );

    test(
      "token-in with images: the route's body, streamed and not, with the Chat request's sampling",
      async () => {
        const model = engine === "vllm" ? "vllm.GenerateRequest" : "sglang.GenerateRequest";
        for (const body of imageBodies(engine)) {
          await expectAccepted(model, body);
          // vLLM's SamplingParams drops unknown keys silently: each one is checked to be a field it reads.
          if (engine === "vllm") await expectAccepted("vllm.SamplingParams", body.sampling_params as Record<string, unknown>);
        }
        // The model rejects what its route would: the check is real.
        const bad = await validate(model, engine === "vllm" ? { token_ids: [], sampling_params: {} } : { input_ids: [1], sampling_params: { max_tokens: 5 } });
        expect(bad.ok).toBe(false);
        if (engine === "vllm") {
          const both = await validate(model, { ...imageBodies("vllm")[0]!, features: { mm_hashes: { image: ["a"] }, mm_placeholders: { image: [{ offset: 0, length: 1 }] } } });
          expect(both.ok).toBe(false);
          expect(unread(await validate("vllm.SamplingParams", { max_tokens: 1, bogus: 1 }))).toEqual(["bogus"]);
        }
      },
      SLOW,
    );

    if (engine === "vllm") {
      test(
        "token-in on the generate route (--token-in-route generate): text prompts' bodies, the engine decoding nothing unless stop strings need the text",
        async () => {
          for (const body of imageBodies("vllm", "text")) {
            await expectAccepted("vllm.GenerateRequest", body);
            await expectAccepted("vllm.SamplingParams", body.sampling_params as Record<string, unknown>);
            expect(body.content_parts).toBeUndefined();
            expect(body.return_token_ids).toBeUndefined();
            const sampling = body.sampling_params as Record<string, unknown>;
            expect(sampling.detokenize).toBe(sampling.stop === undefined ? false : undefined);
          }
          // vLLM refuses stop strings it would not decode (SamplingParams._verify_args): why they keep detokenize.
          await expect(validate("vllm.SamplingParams", { max_tokens: 5, stop: ["</answer>"], detokenize: false })).rejects.toThrow("stop strings are only supported when detokenize is True");
        },
        SLOW,
      );
    }

    if (engine === "sglang") {
      test.skipIf(!!nativeSkip)(
        "token-in with images: native /generate with input_ids and image_data, as GenerateReqInput (.venv/sglang-native)",
        async () => {
          for (const body of imageBodies("sglang")) await expectAccepted("sglang.GenerateReqInput", body);
        },
        SLOW,
      );
    }

    if (engine === "vllm") {
      test(
        "token-in: /v1/completions with a token-id prompt, streamed and not",
        async () => {
          for (const stream of [false, true]) {
            await expectAccepted(completionModel, vllmTokenCompletionRequest("qwen3", [151644, 872, 198, 6023], { max_tokens: 64, temperature: 1, top_p: 1, seed: 7 }, { stream }));
          }
        },
        SLOW,
      );
    } else {
      const generateBody = (stream: boolean) => sglangGenerateRequest([151644, 872, 198, 6023], { max_new_tokens: 64, temperature: 1, top_p: 1, sampling_seed: 7, stop_token_ids: [151645] }, { stream });
      test(
        "token-in: native /generate with input_ids, as its HTTP contract",
        async () => {
          for (const stream of [false, true]) await expectAccepted("sglang.GenerateRequest", generateBody(stream));
          // The contract rejects an unknown sampling parameter: the check is real.
          const bad = await validate("sglang.GenerateRequest", sglangGenerateRequest([1], { max_tokens: 5 } as never));
          expect(bad.ok).toBe(false);
        },
        SLOW,
      );

      test.skipIf(!!nativeSkip)(
        "token-in: native /generate with input_ids, as GenerateReqInput (.venv/sglang-native)",
        async () => {
          for (const stream of [false, true]) await expectAccepted("sglang.GenerateReqInput", generateBody(stream));
        },
        SLOW,
      );

      test.skipIf(!!nativeSkip)(
        "weight sync: each call's body is the request type SGLang defines for it",
        async () => {
          const calls = [...loadCalls("sglang", "/checkpoints/run/global_step_1/actor/huggingface", "1"), versionCall("sglang", "1")];
          for (const call of calls) {
            expect(call.type).toBeDefined();
            await expectAccepted(`sglang.${call.type}`, call.body!);
          }
        },
        SLOW,
      );
    }
  });
}

/**
 * Token-in bodies with images as the proxy builds them (proxy/token-in/engine-request.ts): one
 * pad per image in the ids, the images as data: URLs, streamed and not, with and without logprobs
 * and a JSON schema.
 */
/** The route's bodies for three Chat requests' sampling: with two images, or (`text`) a text prompt on vLLM's generate route. */
function imageBodies(engine: "vllm" | "sglang", prompt: "images" | "text" = "images"): Record<string, unknown>[] {
  const shot = (w: number, h: number) => `data:image/png;base64,${solidPng(w, h).toString("base64")}`;
  const ids = [151644, 872, 198, 151652, 151655, 151653, 151652, 151655, 151653, 198, 6023, 151645, 198, 151644, 77091, 198];
  const images = [shot(1280, 720), shot(390, 844)];
  const chats: Record<string, unknown>[] = [
    { model: "qwen3", messages: [], temperature: 1, top_p: 1, seed: 7, max_tokens: 64 },
    { model: "qwen3", messages: [], stream: true, temperature: 0.6, top_k: 20, stop: ["</answer>"], logprobs: true, top_logprobs: 3 },
    { model: "qwen3", messages: [], min_tokens: 1, presence_penalty: 0.5, response_format: { type: "json_schema", json_schema: { name: "a", schema: { type: "object" } } } },
  ];
  if (prompt === "text") return chats.map((chat) => engineRequest(engine, chat, ids.filter((id) => id !== 151655), { maxModelLen: 32768, topLogprobs: (chat.top_logprobs as number) ?? 0, route: "generate" }).body);
  return chats.map((chat) => engineRequest(engine, chat, ids, { maxModelLen: 32768, topLogprobs: chat.top_logprobs as number ?? 0, images, expandedLength: 2000 }).body);
}

test("vLLM's weight routes take no request model: the bodies carry exactly the fields their handlers read", () => {
  // rl/online/api_router.py: update_weight_version(new_version: Annotated[str, Body(embed=True)]);
  // serve/dev/rpc/api_router.py: collective_rpc reads method, args, kwargs, timeout;
  // v1/worker/gpu_model_runner.py: reload_weights(weights_iterator, weights_path, is_checkpoint_format).
  const calls = loadCalls("vllm", "/checkpoints/run/global_step_1/actor/huggingface", "1");
  const rpc = calls.find((c) => c.path === "/collective_rpc")!;
  expect(Object.keys(rpc.body!).sort()).toEqual(["kwargs", "method"]);
  expect(rpc.body!.method).toBe("reload_weights");
  expect(Object.keys(rpc.body!.kwargs as object)).toEqual(["weights_path"]);
  expect(Object.keys(calls.find((c) => c.path === "/update_weight_version")!.body!)).toEqual(["new_version"]);
  expect(calls.filter((c) => c.body === undefined).map((c) => c.path)).toEqual(["/pause?mode=wait", "/reset_prefix_cache", "/resume"]);
});
