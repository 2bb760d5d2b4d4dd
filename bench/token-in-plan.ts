/**
 * Token-in's plan side in a hot loop: what the proxy does for a call before the engine answers
 * and after it is recorded, on the tool loop's 13 Chat requests (bench/lib/tool-loop.ts) as a
 * harness sends them, timed by step in this checkout (docs/performance.md, issue 32's fifteenth
 * session):
 *
 * - `door`: the Chat door's parse of the request's bytes (`parseHidingStrings`), which engine mode
 *   does too;
 * - `prepare`: vLLM's preprocessing of the messages against the rollout's previous call
 *   (`model.prepare`, previous-messages.ts);
 * - `plan`: the chain the call continues and its prompt ids, the appended text rendered and
 *   tokenized (`planCall`);
 * - `request`: the prompt's JSON text written on from the chain's and the engine request's bytes
 *   (prompt-texts.ts, engine-request.ts, ids-text.ts);
 * - `after`: once recorded, the call's prompt and completion joined and the chain moved on
 *   (`joinIds`, `chainAfter`).
 *
 *   bun bench/token-in-plan.ts [--rounds 9] [--conversations 32]
 *
 * The requests and the sampled ids are real: the tool loop runs against the policy simulator's
 * Chat route once (as an engine-mode harness would, `return_token_ids`), and every conversation
 * replays them as its own rollout, each call continuing its chain (the bench fails if one does
 * not). `bun bench/ab.ts --scenario toolloop --modes` gives the whole call's cost in the proxy.
 */
import { loadModel } from "../model/index.ts";
import { joinIds } from "../records/index.ts";
import { parseHidingStrings, rawMessagesOf, restoreHidden } from "../proxy/doors/hidden-strings.ts";
import { heldMessages, previousMessages } from "../proxy/token-in/previous-messages.ts";
import { planCall } from "../proxy/token-in/plan.ts";
import { chainAfter } from "../proxy/token-in/chain-after.ts";
import { newRolloutChains, useChain } from "../proxy/state/chains.ts";
import { chainPromptText, keepPromptText } from "../proxy/token-in/prompt-texts.ts";
import { engineRequest } from "../proxy/token-in/engine-request.ts";
import { IDS_PLACEHOLDER, withIdsBytes } from "../proxy/token-in/ids-text.ts";
import { benchFlags } from "./lib/flags.ts";
import { recordToolLoop } from "./lib/record-tool-loop.ts";

const { flag } = benchFlags();
const ROUNDS = Number(flag("rounds", "9"));
const CONVERSATIONS = Number(flag("conversations", "32"));

const calls = await recordToolLoop();
const model = await loadModel();
const decoder = new TextDecoder();
const encoder = new TextEncoder();
/** What each call's answer was as the harness sent it back (the next request's assistant turn; the last call's: its own text). */
const answers = calls.map((_, i) => {
  const next = i + 1 < calls.length ? JSON.parse(decoder.decode(calls[i + 1]!.bytes)) : undefined;
  const echo = next?.messages?.findLast((m: { role: string }) => m.role === "assistant");
  const toolCalls = (echo?.tool_calls ?? []).map((t: { function: { name: string; arguments: string } }) => ({ name: t.function.name, arguments: t.function.arguments }));
  return { content: echo?.content ?? "", reasoning: null, toolCalls };
});

const STEPS = ["door", "prepare", "plan", "request", "after"] as const;
type Step = (typeof STEPS)[number];
let sink = 0;

/** One conversation as rollout `id`: every call prepared and planned, its chain moved on; adds each step's ms to `t`. */
function conversation(id: string, t: Record<Step, number>): void {
  const chains = newRolloutChains();
  calls.forEach((call, i) => {
    let at = performance.now();
    const lap = (step: Step) => {
      const now = performance.now();
      t[step] += now - at;
      at = now;
    };
    const chat = restoreHidden(parseHidingStrings(call.bytes));
    lap("door");
    const previous = previousMessages(id);
    const prepared = model.prepare(chat as never, previous, rawMessagesOf(chat));
    heldMessages(id, previous);
    lap("prepare");
    const plan = planCall(model, chains, prepared);
    if (i > 0 && plan.chain === undefined) throw new Error(`bench/token-in-plan: call ${i + 1} of the tool loop started a chain (${plan.detail}): the bench no longer replays a growing conversation`);
    lap("plan");
    const promptText = chainPromptText(plan.prompt, plan.chain?.tokens);
    const req = engineRequest("vllm", chat, plan.prompt, { maxModelLen: 131072, topLogprobs: 0, route: "generate" });
    sink += withIdsBytes(JSON.stringify({ ...req.body, [req.promptKey]: IDS_PLACEHOLDER }), promptText).length;
    lap("request");
    const tokens = joinIds(plan.prompt, call.outputIds);
    keepPromptText(tokens, plan.prompt.length, promptText, plan.chain?.tokens);
    useChain(chains, chainAfter(plan.chain?.id ?? `${id}-${i}`, `${id}-${i}`, { ...plan, prompt: tokens.subarray(0, plan.prompt.length) }, tokens, answers[i]!));
    lap("after");
  });
}

const zero = (): Record<Step, number> => ({ door: 0, prepare: 0, plan: 0, request: 0, after: 0 });
// Warm-up: the template compiled, the caches filled, the functions optimised.
for (let w = 0; w < 4; w++) for (let c = 0; c < CONVERSATIONS; c++) conversation(`warm-${w}-${c}`, zero());
const rounds: Record<Step, number>[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const t = zero();
  for (let c = 0; c < CONVERSATIONS; c++) conversation(`round-${r}-${c}`, t);
  for (const step of STEPS) t[step] = (t[step] / (CONVERSATIONS * calls.length)) * 1000;
  rounds.push(t);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const sizes = calls.map((c) => c.bytes.length);
console.log(`bench/token-in-plan: the tool loop's ${calls.length} calls (requests of ${(sizes[0]! / 1024).toFixed(1)}–${(sizes.at(-1)! / 1024).toFixed(1)} KiB), ${CONVERSATIONS} conversations a round, µs per call, median of ${ROUNDS} rounds (sink ${sink > 0 ? "ok" : "empty"})`);
for (const step of STEPS) console.log(`  ${step.padEnd(8)} ${median(rounds.map((r) => r[step])).toFixed(1).padStart(6)}${step === "door" ? "  (engine mode too)" : ""}`);
const tokenIn = median(rounds.map((r) => r.prepare + r.plan + r.request + r.after));
console.log(`  token-in's own (prepare + plan + request + after): ${tokenIn.toFixed(1)} µs a call`);
