/**
 * What rendering costs on every simulated model call: model/'s preprocessing + chat template
 * (render) and whole-text tokenization (tokenize) for the chat requests recorded from real
 * harness CLIs (tests/reference/fixtures), cold (first sight of a system prompt) and warm (the
 * next call of the rollout: the system prompt's pieces are cached), and a whole non-streamed
 * simulator call for the same requests. With `--base DIR` (another checkout, e.g. main before
 * model/ existed) the same simulator calls are timed there too, interleaved, and the ratio is
 * printed.
 *
 *   bun bench/model-prompt.ts [--rounds 20] [--base /path/to/other/checkout]
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadModel } from "../model/index.ts";
import { benchFlags } from "./lib/flags.ts";

const { flag } = benchFlags();
const rounds = Number(flag("rounds", "20"));
const base = flag("base", "");
const dir = join(import.meta.dir, "..", "tests", "reference", "fixtures");
const requests: { name: string; body: Record<string, unknown> }[] = [];
for (const file of readdirSync(dir).filter((f) => f.startsWith("harness-")).sort()) {
  const { harness, requests: rs } = JSON.parse(readFileSync(join(dir, file), "utf8")) as { harness: string; requests: Record<string, unknown>[] };
  rs.forEach((body, i) => requests.push({ name: `${harness}#${i + 1}`, body }));
}
const chars = (b: Record<string, unknown>) => JSON.stringify(b).length;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const model = await loadModel();
// Cold: a fresh process has seen none of these prompts; the first call of each harness is.
const cold: number[] = [];
for (const { body } of requests) {
  const t = performance.now();
  model.renderChatIds(body as never);
  cold.push(performance.now() - t);
}
const render: number[] = [];
const tokenize: number[] = [];
for (let r = 0; r < rounds; r++) {
  for (const { body } of requests) {
    let t = performance.now();
    const text = model.renderChat(body as never);
    render.push(performance.now() - t);
    t = performance.now();
    model.tokenizer.encode(text);
    tokenize.push(performance.now() - t);
  }
}
const totalChars = requests.reduce((s, r) => s + chars(r.body), 0);
console.log(`${requests.length} recorded harness requests, ${(totalChars / requests.length / 1024).toFixed(0)} KB of JSON on average`);
console.log(`model/ cold (first sight of each prompt): median ${median(cold).toFixed(2)} ms, max ${Math.max(...cold).toFixed(1)} ms per call`);
console.log(`model/ warm: render ${median(render).toFixed(2)} ms + tokenize ${median(tokenize).toFixed(2)} ms per call (medians over ${rounds} rounds)`);

type Fetch = (r: Request) => Promise<Response> | Response;
async function simulatorOf(root: string): Promise<Fetch> {
  const mod = (await import(join(resolve(root), "simulator", "index.ts"))) as { createPolicySimulator(o: { seed: number }): { fetch: Fetch }; loadTokenizer(): Promise<unknown> };
  await mod.loadTokenizer();
  return mod.createPolicySimulator({ seed: 1 }).fetch;
}
const call = async (fetchFn: Fetch, body: Record<string, unknown>) => {
  const { stream: _s, stream_options: _o, ...rest } = body;
  const t = performance.now();
  const res = await fetchFn(new Request("http://sim/v1/chat/completions", { method: "POST", body: JSON.stringify({ ...rest, return_token_ids: true }) }));
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`simulator answered ${res.status}`);
  return performance.now() - t;
};
const ours = await simulatorOf(join(import.meta.dir, ".."));
const theirs = base ? await simulatorOf(base) : undefined;
const a: number[] = [];
const b: number[] = [];
for (let r = 0; r < rounds; r++) {
  for (const { body } of requests) {
    a.push(await call(ours, body));
    if (theirs) b.push(await call(theirs, body));
  }
}
console.log(`simulator chat call (non-streamed, in process): median ${median(a).toFixed(2)} ms here; rendering + tokenizing is ${((median(render) + median(tokenize)) / median(a)).toFixed(2)} of it`);
if (theirs) console.log(`${base}: median ${median(b).toFixed(2)} ms per call; this checkout / base = ${(median(a) / median(b)).toFixed(2)}`);
