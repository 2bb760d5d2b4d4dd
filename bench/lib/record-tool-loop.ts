/**
 * The tool loop's Chat requests as a harness sends them (bench/lib/tool-loop.ts, 13 streamed
 * calls), each with what the policy simulator's Chat route sampled for it: the loop runs once
 * against the simulator through a relay that asks for the sampled ids (`return_token_ids`, as
 * engine mode does) and hands the harness the answer without them. For the benches that replay a
 * real conversation (bench/engine-render.ts, bench/token-in-plan.ts).
 */
import { startPolicySimulator } from "../../simulator/index.ts";
import { runToolLoop, TOOL_LOOP_SCRIPT } from "./tool-loop.ts";

export interface RecordedCall {
  /** The request's bytes as the harness sent them. */
  bytes: Uint8Array;
  /** The same, parsed. */
  request: Record<string, unknown>;
  /** The prompt length the simulator reported (its usage), if it did. */
  promptTokens: number | undefined;
  /** The ids it sampled. */
  outputIds: number[];
}

/**
 * Runs the tool loop once and returns its calls.
 *
 * @example
 * const calls = await recordToolLoop(); // 13 calls, requests of 5–23 KB
 */
export async function recordToolLoop(): Promise<RecordedCall[]> {
  const sim = await startPolicySimulator({ seed: 1, chunkDelayMs: 0, script: TOOL_LOOP_SCRIPT });
  const calls: RecordedCall[] = [];
  const relay = Bun.serve({
    port: 0,
    async fetch(req) {
      const bytes = new Uint8Array(await req.arrayBuffer());
      const request = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
      const answer = await fetch(`${sim.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ...request, return_token_ids: true }) });
      const text = await answer.text();
      const chunks = text
        .split("\n")
        .filter((l) => l.startsWith("data: {"))
        .map((l) => JSON.parse(l.slice(6)));
      const usage = chunks.map((c) => c.usage).find((u) => u && typeof u.prompt_tokens === "number");
      calls.push({ bytes, request, promptTokens: usage?.prompt_tokens, outputIds: chunks.flatMap((c) => c.choices?.[0]?.token_ids ?? []) });
      // The harness gets the answer without the ids it did not ask for.
      for (const c of chunks) {
        delete c.prompt_token_ids;
        for (const choice of c.choices ?? []) delete choice.token_ids;
      }
      return new Response(chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n", { status: answer.status, headers: { "content-type": "text/event-stream" } });
    },
  });
  try {
    await runToolLoop(`http://127.0.0.1:${relay.port}/v1/chat/completions`, "none", { stream: true });
  } finally {
    relay.stop(true);
    await sim.stop();
  }
  return calls;
}
