/**
 * Each engine stand-in (the simulator's vLLM 0.33.0 and SGLang 0.5.23 flavours) behind the real
 * proxy in train mode, with the official openai client as the harness: the proxy identifies the
 * engine, asks it for ids its own way, reads them from where it puts them, checks them against
 * usage, records the sampling parameters, and hands the harness only what it asked for.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { CallStatus, Engine, LogprobsMode, Protocol, SamplingSource, TokenStatus, type ModelCall } from "../../schemas/index.ts";
import { expectTokenExact, startProxyHarness, upstreamRequestsOf, type ProxyHarness } from "../../proxy/testing.ts";
import { startProxy } from "../../proxy/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { readRecords } from "../../records/index.ts";
import { exportTrajectories } from "../../trajectories/index.ts";
import { sidecarPath } from "../../trajectories/testing.ts";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const last = <T>(xs: T[]) => xs[xs.length - 1]!;
const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
type Extra = Record<string, any>;

for (const engine of ["vllm", "sglang"] as const) {
  describe(`${engine} stand-in through the proxy (train mode)`, () => {
    let h: ProxyHarness;
    beforeAll(async () => {
      h = await startProxyHarness({ sim: { engine, logprobsMode: "processed_logprobs" } });
    });
    afterAll(async () => {
      await h.close();
    });
    const sample = () => last(h.sims[0]!.samples);
    const only = async (rollout: string): Promise<ModelCall> => {
      const calls = await h.calls(rollout);
      expect(calls).toHaveLength(1);
      return calls[0]!;
    };

    test("the proxy identified the engine where it says who it is", () => {
      const e = h.proxy.proxy.state.engine;
      expect(e.info.kind).toBe(engine);
      expect(e.info.version).toBe(engine === "vllm" ? "0.33.0+forge-policy-simulator" : "0.5.23+forge-policy-simulator");
      expect(e.info.how).toContain(engine === "vllm" ? "GET" : "/server_info");
      expect(e.pending.size).toBe(0);
    });

    test("chat, not streamed: COMPLETE with the stand-in's exact ids; no id field reaches the harness", async () => {
      const r = await h.register();
      const answer = (await h.client(r).chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: "hello there" }], temperature: 0.6, top_p: 0.95, seed: 11 })) as unknown as Extra;
      const s = sample();
      // The content is what follows Qwen3's think block.
      expect(answer.choices[0].message.content).toBe(s.text.replace("<|im_end|>", "").split("</think>")[1]!);
      for (const key of ["prompt_token_ids", "sglext"]) expect(answer[key]).toBeUndefined();
      for (const key of ["token_ids", "response_token_ids", "prompt_token_ids"]) expect(answer.choices[0][key]).toBeUndefined();
      expect(answer.choices[0].logprobs).toBeNull();
      const call = await only(r.rollout_id);
      expectTokenExact(call, [call], s, Protocol.CHAT);
      expect(call.tokenStatusReason).toBe("");
      expect(call.completionLogprobs).toHaveLength(s.token_ids.length);
      expect(call.engine).toBe(engine === "vllm" ? Engine.VLLM : Engine.SGLANG);
      expect(call.engineVersion).toBe(h.proxy.proxy.state.engine.info.version);
      expect(call.logprobsMode).toBe(engine === "vllm" ? LogprobsMode.PROCESSED_LOGPROBS : LogprobsMode.UNKNOWN);
      // What was asked upstream is the engine's own way.
      const sent = upstreamRequestsOf([call])[0] as Extra;
      expect(sent.return_token_ids).toBe(true);
      expect(sent.logprobs).toBe(true);
      // Sampling parameters: the request's, and where the engine's defaults are fixed, those.
      const sp = call.sampling!;
      expect(sp.temperature).toBeCloseTo(0.6, 6);
      expect(sp.topP).toBeCloseTo(0.95, 6);
      expect(sp.seed).toBe(11);
      expect(sp.temperatureSource).toBe(SamplingSource.REQUEST);
      expect(sp.topKSource).toBe(SamplingSource.UNKNOWN); // the model's generation_config
      expect(sp.n).toBe(1);
      expect(sp.nSource).toBe(SamplingSource.ENGINE_DEFAULT);
    });

    test("chat, streamed: COMPLETE with the exact ids; the harness gets neither ids nor the usage/sglext chunk", async () => {
      const r = await h.register();
      const stream = await h.client(r).chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: "stream please" }], stream: true });
      let text = "";
      for await (const chunk of stream) {
        const c = chunk as unknown as Extra;
        expect(c.prompt_token_ids ?? undefined).toBeUndefined();
        expect(c.sglext).toBeUndefined();
        expect(c.usage ?? undefined).toBeUndefined();
        expect(c.choices.length).toBeGreaterThan(0);
        expect(c.choices[0].token_ids ?? undefined).toBeUndefined();
        text += c.choices[0]?.delta?.content ?? "";
      }
      const s = sample();
      expect(text).toBe(s.text.replace("<|im_end|>", "").split("</think>")[1]!);
      const call = await only(r.rollout_id);
      expectTokenExact(call, [call], s, Protocol.CHAT);
      expect(call.completionLogprobs).toHaveLength(s.token_ids.length);
      const sent = upstreamRequestsOf([call])[0] as Extra;
      if (engine === "sglang") {
        // SGLang refuses return_token_ids on a streamed chat; its ids come in the sglext chunk.
        expect(sent.return_token_ids).toBeUndefined();
        expect(sent.return_input_ids_in_sglext).toBe(true);
        expect(sent.return_output_ids_in_sglext).toBe(true);
        expect(decode(call.responseBody)).not.toContain("sglext");
      } else {
        expect(sent.return_token_ids).toBe(true);
      }
      expect(sent.stream_options).toEqual({ include_usage: true });
    });

    test("chat with tools, streamed and not: the tool-call markup tokens are in the ids", async () => {
      const tools = [{ type: "function" as const, function: { name: "bash", description: "run", parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } } }];
      for (const stream of [false, true]) {
        const r = await h.register();
        const body = { model: "qwen3", messages: [{ role: "user" as const, content: "run `ls -la` please" }], tools, stream };
        const res = await fetch(`${r.openai_base_url}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
        expect(res.status).toBe(200);
        await res.text();
        const call = await only(r.rollout_id);
        expectTokenExact(call, [call], sample(), Protocol.CHAT);
        expect(call.finishReason).toBe("tool_calls");
        expect(call.completionTokenIds).toContain(151657); // <tool_call>
      }
    });

    test("completions, streamed and not: COMPLETE with the exact ids", async () => {
      for (const stream of [false, true]) {
        const r = await h.register();
        const client = h.client(r);
        if (stream) {
          let text = "";
          for await (const chunk of await client.completions.create({ model: "qwen3", prompt: "Once upon a time", max_tokens: 8, stream: true })) {
            const c = chunk as unknown as Extra;
            expect(c.choices[0]?.token_ids ?? undefined).toBeUndefined();
            text += c.choices[0]?.text ?? "";
          }
          expect(text.length).toBeGreaterThan(0);
        } else {
          const answer = (await client.completions.create({ model: "qwen3", prompt: "Once upon a time", max_tokens: 8 })) as unknown as Extra;
          expect(answer.choices[0].token_ids).toBeUndefined();
          expect(answer.choices[0].prompt_token_ids).toBeUndefined();
        }
        const call = await only(r.rollout_id);
        expectTokenExact(call, [call], sample(), Protocol.COMPLETIONS);
        expect(call.completionLogprobs).toHaveLength(sample().token_ids.length);
        expect(call.sampling!.maxTokens).toBe(8);
        expect(call.sampling!.maxTokensSource).toBe(SamplingSource.REQUEST);
        // SGLang's completions defaults are fixed by its request model; vLLM's come from the model.
        expect(call.sampling!.temperatureSource).toBe(engine === "sglang" ? SamplingSource.ENGINE_DEFAULT : SamplingSource.UNKNOWN);
      }
    });

    test("completions with echo: the harness gets its prompt echoed, the record only the sampled ids and their logprobs", async () => {
      for (const stream of [false, true]) {
        const r = await h.register();
        const res = await fetch(`${r.openai_base_url}/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "qwen3", prompt: "Echo me", max_tokens: 6, echo: true, logprobs: 1, stream }),
        });
        expect(res.status).toBe(200);
        const raw = await res.text();
        const text = stream
          ? raw
              .split("\n\n")
              .filter((e) => e.startsWith("data: {"))
              .map((e) => JSON.parse(e.slice(6)).choices[0]?.text ?? "")
              .join("")
          : JSON.parse(raw).choices[0].text;
        expect(text.startsWith("Echo me")).toBe(true);
        const call = await only(r.rollout_id);
        const s = sample();
        expectTokenExact(call, [call], s, Protocol.COMPLETIONS);
        expect(call.completionLogprobs).toHaveLength(s.token_ids.length);
        call.completionLogprobs.forEach((lp, i) => expect(lp).toBeCloseTo(s.logprobs[i]!, 5));
      }
    });

    test("n > 1 is refused in train mode with a clear error, before anything is sent upstream", async () => {
      const r = await h.register();
      const before = h.sims[0]!.samples.length;
      const error = await h
        .client(r)
        .chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: "two" }], n: 2 })
        .catch((e) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.message).toContain("n: the proxy records one sampled answer per call in train mode");
      expect(error.param).toBe("n");
      expect(h.sims[0]!.samples.length).toBe(before);
    });

    test("the engine's own error reaches the harness with the engine's message", async () => {
      const r = await h.register();
      // A harness asking for vLLM's stream ids itself: vLLM serves it, SGLang refuses with its flat error.
      const res = await fetch(`${r.openai_base_url}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "qwen3", messages: [{ role: "user", content: "hi" }], stream: true, return_token_ids: true }),
      });
      if (engine === "vllm") {
        expect(res.status).toBe(200);
        expect(await res.text()).toContain('"token_ids"');
        return;
      }
      expect(res.status).toBe(400);
      const body = (await res.json()) as Extra;
      expect(body.error.message).toBe(
        "return_token_ids is not supported with streaming on /v1/chat/completions. Please set stream=false when using return_token_ids=true.",
      );
      expect(body.error.type).toBe("BadRequest");
      const call = await only(r.rollout_id);
      expect(call.status).toBe(CallStatus.UPSTREAM_ERROR);
      expect(call.error).toContain("return_token_ids is not supported with streaming");
      // Through the openai client too: the message is the engine's.
      const error = await h
        .client(r)
        .chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: "hi" }], stream: true, ...({ return_token_ids: true } as Extra) })
        .then(async (s) => {
          for await (const _ of s) {
          }
        })
        .catch((e) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.message).toContain("return_token_ids is not supported with streaming");
    });
  });
}

describe("ids with holes, and engines that cannot train", () => {
  for (const engine of ["vllm", "sglang"] as const) {
    test(`${engine}: ids that do not agree with usage are recorded PARTIAL with the reason, streamed and not`, async () => {
      // The start-up probe would refuse this upstream (see below), so the check is off here.
      const h = await startProxyHarness({ sim: { engine, faults: { holeyIds: true } }, proxy: { engine, engineProbe: false } });
      try {
        for (const stream of [false, true]) {
          const r = await h.register();
          const res = await fetch(`${r.openai_base_url}/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${r.api_key}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "qwen3", messages: [{ role: "user", content: "a longer answer, please, with several words in it" }], stream }),
          });
          expect(res.status).toBe(200);
          await res.text();
          const [call] = await h.calls(r.rollout_id);
          expect(call!.status).toBe(CallStatus.OK);
          expect(call!.tokenStatus).toBe(TokenStatus.PARTIAL);
          expect(call!.tokenStatusReason).toMatch(/^ids do not agree with usage \(completion ids: \d+, usage\.completion_tokens: \d+\)/);
          expect(call!.completionTokenIds.length).toBeLessThan(last(h.sims[0]!.samples).token_ids.length);
        }
      } finally {
        await h.close();
      }
    });
  }

  const refusedAtStart = async (sim: Parameters<typeof startPolicySimulator>[0], proxy: Record<string, unknown> = {}) => {
    const s = await startPolicySimulator(sim);
    const dataDir = await mkdtemp(join(tmpdir(), "forge-engines-"));
    try {
      const error = await startProxy({ listen: "127.0.0.1:0", upstreams: [`${s.url}/v1`], dataDir, adminToken: "t", healthIntervalMs: 0, ...proxy }).then(
        async (p) => {
          await p.stop();
          return undefined;
        },
        (e: Error) => e,
      );
      return error;
    } finally {
      await s.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  };

  test("vLLM before 0.13.0 is refused in train mode, naming the version and vllm#27482", async () => {
    const error = await refusedAtStart({ seed: 1, engine: "vllm", engineVersion: "0.12.0" });
    expect(error?.message).toContain("train mode needs vLLM ≥ 0.13.0");
    expect(error?.message).toContain("vllm-project/vllm#27482");
  });

  test("SGLang before 0.5.20 is refused in train mode, naming the version", async () => {
    const error = await refusedAtStart({ seed: 1, engine: "sglang", engineVersion: "0.5.19" });
    expect(error?.message).toContain("train mode needs SGLang ≥ 0.5.20");
    expect(error?.message).toContain("streamed chat");
  });

  test("an engine whose probe shows missing ids is refused; eval mode serves it", async () => {
    const error = await refusedAtStart({ seed: 1, engine: "sglang", faults: { holeyIds: true } });
    expect(error?.message).toContain("does not return the token ids training needs");
    expect(error?.message).toContain("one-token non-streamed chat call");
    expect(await refusedAtStart({ seed: 1, engine: "sglang", faults: { holeyIds: true } }, { mode: "eval" })).toBeUndefined();
  });

  test("an explicit --engine that the upstream contradicts is refused", async () => {
    const error = await refusedAtStart({ seed: 1, engine: "sglang" }, { engine: "vllm" });
    expect(error?.message).toContain("--engine vllm, but upstream");
    expect(error?.message).toContain("SGLang 0.5.23");
  });

  test("vLLM: include_reasoning false is never sent upstream (it drops the ids); the harness still gets no reasoning", async () => {
    const h = await startProxyHarness({ sim: { engine: "vllm", script: { thinking: true } } });
    try {
      const r = await h.register();
      const answer = (await h.client(r).chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: "think first" }], ...({ include_reasoning: false } as Extra) })) as unknown as Extra;
      expect(answer.choices[0].message.reasoning).toBeUndefined();
      const [call] = await h.calls(r.rollout_id);
      expect(call!.tokenStatus).toBe(TokenStatus.COMPLETE);
      expect(call!.completionTokenIds).toContain(151667); // <think>
      expect((upstreamRequestsOf([call!])[0] as Extra).include_reasoning).toBeUndefined();
    } finally {
      await h.close();
    }
  });

  test("vLLM: an echoed token-id prompt is refused in train mode (vLLM gives no prompt text back with ids)", async () => {
    const h = await startProxyHarness({ sim: { engine: "vllm" } });
    try {
      const r = await h.register();
      const error = await h
        .client(r)
        .completions.create({ model: "qwen3", prompt: [9707, 1879], echo: true, max_tokens: 2 })
        .catch((e) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error.message).toContain("echo: with a token-id prompt in train mode");
    } finally {
      await h.close();
    }
  });

  test("eval mode: n > 1 passes through unchanged and is recorded NOT_REQUESTED", async () => {
    const h = await startProxyHarness({ sim: { engine: "sglang" }, proxy: { mode: "eval" } });
    try {
      const r = await h.register();
      const answer = await h.client(r).chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: "two" }], n: 2 });
      expect(answer.choices).toHaveLength(2);
      const [call] = await h.calls(r.rollout_id);
      expect(call!.tokenStatus).toBe(TokenStatus.NOT_REQUESTED);
      expect(call!.upstreamRequestBody.length + call!.upstreamRequestPatch.length).toBe(0);
      expect(call!.sampling!.n).toBe(2);
      expect(call!.engine).toBe(Engine.SGLANG);
    } finally {
      await h.close();
    }
  });
});

test("the sampling parameters, the engine and its logprob mode reach the veRL export (parquet through DuckDB, and its JSONL sidecar)", async () => {
  const h = await startProxyHarness({ sim: { engine: "vllm", logprobsMode: "processed_logprobs" } });
  try {
    for (const task of ["a", "b"]) {
      const r = await h.register({ task_id: task, group: "g" });
      await h.client(r).chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: `task ${task}` }], temperature: 0.7, top_p: 0.9, ...({ top_k: 20 } as Extra) });
      await h.control(`/control/rollouts/${r.rollout_id}/finish`, { reward: 1, status: "ok" });
    }
    const out = join(h.dataDir, "exports", "batch.parquet");
    const manifest = await exportTrajectories(readRecords(h.dataDir), { format: "verl", out, minGroupSize: 1 });
    expect(manifest.rows).toBe(2);
    const rows = (await Bun.file(sidecarPath(out)).text()).trim().split("\n").map((line) => JSON.parse(line));
    for (const row of rows) {
      expect(row.extra_info.sampling).toMatchObject({ temperature: 0.7, top_p: 0.9, top_k: 20, min_p: null, max_tokens: null, constraints: null });
      expect(JSON.parse(row.extra_info.sampling.sources)).toMatchObject({ temperature: "request", top_p: "request", top_k: "request", min_p: "unknown", n: "engine_default" });
      expect(row.extra_info).toMatchObject({ sampling_varies: false, engine: "vllm", engine_version: "0.33.0+forge-policy-simulator", logprobs_mode: "processed_logprobs" });
    }
  } finally {
    await h.close();
  }
});
