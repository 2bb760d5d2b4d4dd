/**
 * Seeded generators of hostile request bodies for the front-door fuzz: random bytes, random
 * JSON, and valid bodies of each protocol mutated field by field (deleted, retyped, replaced
 * by random JSON, nested deeply, truncated or byte-flipped as text).
 */

/** mulberry32: a small seeded PRNG, so a failing input is reproduced from its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const STRINGS = ["", " ", "user", "assistant", "system", "tool", "developer", "function", "text", "image_url", "input_text", "tool_use", "tool_result", "message", "\u0000", "\ud800", "💥", "a".repeat(300), "null", "{}", "data: [DONE]", "../../etc/passwd", "__proto__", "constructor"];
const NUMBERS = [0, -1, 1, 2 ** 31, -(2 ** 53), 1e308, -1e-308, 0.5, 3, 1 << 30, Number.MAX_SAFE_INTEGER];

/** A random JSON value of bounded depth and size. */
export function randomJson(r: Rand, depth = 3): unknown {
  const k = r();
  if (depth <= 0 || k < 0.35) {
    const s = r();
    if (s < 0.3) return pick(r, STRINGS);
    if (s < 0.55) return pick(r, NUMBERS);
    if (s < 0.7) return r() < 0.5;
    if (s < 0.8) return null;
    return Array.from({ length: Math.floor(r() * 12) }, () => String.fromCharCode(Math.floor(r() * 0x2fff))).join("");
  }
  if (k < 0.65) return Array.from({ length: Math.floor(r() * 4) }, () => randomJson(r, depth - 1));
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(r() * 4); i > 0; i--) o[pick(r, ["type", "role", "content", "text", "model", "stream", "id", "name", "input", "messages", pick(r, STRINGS)])] = randomJson(r, depth - 1);
  return o;
}

/** Valid bodies of each front door, the seeds the mutations start from. */
export const SEED_BODIES: Record<string, Record<string, unknown>[]> = {
  chat: [
    { model: "m", messages: [{ role: "user", content: "hi" }] },
    { model: "m", stream: true, max_tokens: 8, messages: [{ role: "system", content: "s" }, { role: "user", content: [{ type: "text", text: "hi" }] }] },
    { model: "m", messages: [{ role: "user", content: "x" }, { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] }, { role: "tool", tool_call_id: "c1", content: "ok" }], tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }] },
  ],
  completions: [
    { model: "m", prompt: "Once upon", max_tokens: 8 },
    { model: "m", prompt: ["a", "b"], stream: true, max_tokens: 4 },
  ],
  responses: [
    { model: "m", input: "hi" },
    { model: "m", stream: true, instructions: "be brief", input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }], tools: [{ type: "function", name: "shell", parameters: { type: "object", properties: {} } }] },
    { model: "m", input: [{ type: "message", role: "user", content: "x" }, { type: "function_call", call_id: "c1", name: "shell", arguments: "{}" }, { type: "function_call_output", call_id: "c1", output: "ok" }] },
  ],
  messages: [
    { model: "m", max_tokens: 16, messages: [{ role: "user", content: "hi" }] },
    { model: "m", max_tokens: 16, stream: true, system: [{ type: "text", text: "s" }], messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }], tools: [{ name: "Bash", input_schema: { type: "object" } }] },
    { model: "m", max_tokens: 16, messages: [{ role: "user", content: "x" }, { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Bash", input: { cmd: "ls" } }] }, { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] }] },
  ],
};

function paths(value: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const p = [...prefix, k];
      out.push(p);
      paths(v, p, out);
    }
  }
  return out;
}

function mutateValue(r: Rand, body: Record<string, unknown>): unknown {
  const copy = structuredClone(body) as any;
  const all = paths(copy);
  if (all.length === 0) return { ...copy, [pick(r, STRINGS)]: randomJson(r) };
  const path = pick(r, all);
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key];
  const last = path[path.length - 1]!;
  const op = r();
  if (op < 0.25) {
    if (Array.isArray(parent) && /^\d+$/.test(String(last))) parent.splice(Number(last), 1);
    else delete parent[last];
  } else if (op < 0.6) parent[last] = randomJson(r);
  else if (op < 0.75) parent[last] = pick(r, [null, 0, "", [], {}, true, "x".repeat(5000)]);
  else if (op < 0.85) {
    // Deep nesting where an object or array is expected.
    let deep: unknown = "leaf";
    for (let i = 0; i < 200; i++) deep = r() < 0.5 ? [deep] : { content: deep };
    parent[last] = deep;
  } else if (Array.isArray(parent[last])) parent[last] = [...parent[last], ...parent[last], randomJson(r)];
  else parent[pick(r, STRINGS)] = randomJson(r);
  return copy;
}

function mutateText(r: Rand, text: string): string {
  const op = r();
  if (op < 0.35) return text.slice(0, Math.floor(r() * text.length));
  const at = Math.floor(r() * text.length);
  if (op < 0.65) return text.slice(0, at) + String.fromCharCode(Math.floor(r() * 128)) + text.slice(at + 1);
  if (op < 0.85) return text.slice(0, at) + pick(r, ["{", "}", "[", "]", '"', ",", ":", "\\", "\\u", "\u0000"]) + text.slice(at);
  return text + pick(r, ["", " ", "x", "}", "\n{}"]);
}

export interface FuzzInput {
  /** How the body was made, for the failure message. */
  kind: "random-bytes" | "random-json" | "mutated-value" | "mutated-text" | "wrong-type" | "seed";
  body: Uint8Array;
  contentType: string | null;
}

/**
 * The i-th input for a front door; a pure function of (door, seed, i).
 *
 * @example
 * const input = fuzzInput("chat", 42, 0);
 */
export function fuzzInput(door: keyof typeof SEED_BODIES, seed: number, i: number): FuzzInput {
  const r = seededRandom(seed * 100_003 + i * 7919 + door.length);
  const seeds = SEED_BODIES[door]!;
  const base = pick(r, seeds);
  const k = r();
  const enc = (s: string) => new TextEncoder().encode(s);
  if (k < 0.08) return { kind: "random-bytes", body: Uint8Array.from({ length: Math.floor(r() * 256) }, () => Math.floor(r() * 256)), contentType: "application/json" };
  if (k < 0.2) return { kind: "random-json", body: enc(JSON.stringify(randomJson(r, 4)) ?? "null"), contentType: "application/json" };
  if (k < 0.3) return { kind: "mutated-text", body: enc(mutateText(r, JSON.stringify(base))), contentType: "application/json" };
  if (k < 0.33) return { kind: "wrong-type", body: enc(JSON.stringify(base)), contentType: pick(r, [null, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) };
  if (k < 0.36) return { kind: "seed", body: enc(JSON.stringify(base)), contentType: "application/json" };
  let mutated = mutateValue(r, base);
  for (let extra = Math.floor(r() * 3); extra > 0 && mutated && typeof mutated === "object"; extra--) mutated = mutateValue(r, mutated as Record<string, unknown>);
  return { kind: "mutated-value", body: enc(JSON.stringify(mutated)), contentType: "application/json" };
}
