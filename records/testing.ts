/**
 * Test helpers: one record of each kind, and a scratch data directory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rgbPng } from "../model/testing.ts";
import {
  CallStatus,
  create,
  Protocol,
  RecordSchema,
  RolloutStatus,
  TokenStatus,
  type Record,
} from "../schemas/index.ts";
// Names only tests use outside the records area (docs/architecture.md: a face exports what other areas use).
export { segmentIndexDir } from "./segment-index.ts";

/**
 * A ModelCall record with a body of `bodyBytes` bytes derived from `callId` (so a reader can
 * check it byte for byte with `expectedBody`).
 *
 * @example
 * log.append(modelCallRecord("r1", 1, "r1-1", 2048));
 */
export function modelCallRecord(rolloutId: string, seq: number, callId: string, bodyBytes = 64): Record {
  return create(RecordSchema, {
    kind: {
      case: "modelCall",
      value: {
        rolloutId,
        seq,
        callId,
        startUnixMs: 1_764_000_000_000.25,
        endUnixMs: 1_764_000_000_900.5,
        protocol: Protocol.CHAT,
        requestBody: expectedBody(callId, bodyBytes),
        responseBody: new TextEncoder().encode(`{"id":"${callId}"}`),
        model: "qwen3",
        upstream: "http://127.0.0.1:8000",
        policyVersion: 3,
        stream: true,
        httpStatus: 200,
        status: CallStatus.OK,
        usage: { promptTokens: 3, completionTokens: 2, totalTokens: 5 },
        promptTokenIds: [151644, 9707, 151645],
        completionTokenIds: [9707, 151645],
        completionLogprobs: [-0.5, -0.125],
        finishReason: "stop",
        tokenStatus: TokenStatus.COMPLETE,
        prefixOf: seq > 1 ? `${rolloutId}-${seq - 1}` : "",
        prefixLen: seq > 1 ? 5 : 0,
        promptLen: 3,
        session: { "session-id": rolloutId },
      },
    },
  });
}

/** Deterministic bytes for a call id: what `modelCallRecord` puts in request_body. */
export function expectedBody(callId: string, bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let h = 2166136261;
  for (let i = 0; i < callId.length; i++) h = Math.imul(h ^ callId.charCodeAt(i), 16777619);
  for (let i = 0; i < bytes; i++) {
    h = Math.imul(h ^ i, 16777619);
    out[i] = h >>> 24;
  }
  return out;
}

/** The request_body size test-writer.ts uses for record `n` of stream `s` (1..maxBytes, varied). */
export function bodySizeFor(stream: number, n: number, maxBytes: number): number {
  return 1 + ((n * 7919 + stream * 104729) % maxBytes);
}

/** One record of each of the four kinds. */
export function recordsOfEveryKind(): Record[] {
  return [
    create(RecordSchema, {
      kind: {
        case: "rollout",
        value: { rolloutId: "r1", experiment: "exp", iteration: 2, taskId: "t1", group: "t1@3", attempt: 1, harness: "codex", createdUnixMs: 1.5, policyVersion: 3, labels: { commit: "abc" }, keySha256: "00ff" },
      },
    }),
    modelCallRecord("r1", 1, "r1-1", 300),
    create(RecordSchema, { kind: { case: "blob", value: { sha256: "ab".repeat(32), mediaType: "image/png", data: new Uint8Array([137, 80, 78, 71, 0, 255]) } } }),
    create(RecordSchema, {
      kind: {
        case: "rolloutResult",
        value: { rolloutId: "r1", reward: 0.75, status: RolloutStatus.FAILED, verifierOutput: "1 of 2 tests", finishedUnixMs: 2.5, error: "", metrics: { tests: 2 } },
      },
    }),
  ];
}

/** A scratch data directory, removed by `cleanup()`. */
export function scratchDir(prefix = "forge-recorder-"): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export type ConversationProtocol = "chat" | "anthropic" | "responses" | "completions" | "completions-ids";

export type ConversationOptions = {
  /** Bytes of each tool result (default 1000). */
  resultBytes?: number;
  /** Screenshots (base64 text): turn t's tool result shows screenshots[t - 1] (cycling), resent with every later call. */
  screenshots?: string[];
  /** Only the screenshots of the last this many turns are sent; older ones become a text placeholder (as computer-use harnesses do). */
  keepScreenshots?: number;
  /** JSON.stringify's `space` (pretty-printed bodies). */
  space?: number;
  /** Extra top-level fields (sampling parameters that change between calls). */
  extra?: { [key: string]: unknown };
};

/** Deterministic text of `n` bytes (ASCII with some escapes and UTF-8, as tool output has). */
function textOf(tag: string, n: number): string {
  const words = ["let", "x", "=", "\"quoted\"", "path\\to\\file", "é", "→", "\n", "\t", "💡", "{", "}", "[", "]"];
  let out = `${tag}:`;
  let h = 2166136261;
  for (let i = 0; i < tag.length; i++) h = Math.imul(h ^ tag.charCodeAt(i), 16777619);
  while (out.length < n) {
    h = Math.imul(h ^ (h >>> 15), 2246822507) ^ 0x9e3779b9;
    h ^= h >>> 13;
    const r = h >>> 0;
    // A word from the list or a number: text that does not repeat between tags.
    out += r % 3 === 0 ? `${words[r % words.length]} ` : `${(r >>> 4).toString(36)} `;
  }
  return out.slice(0, n);
}

/**
 * The request body a harness sends on turn `turn` (1-based) of a conversation: the system
 * prompt, tools, and every earlier turn's messages again, in the shape of each protocol.
 *
 * @example
 * conversationBody("anthropic", 3, "ro-1") // Uint8Array of {"model":...,"system":...,"messages":[...5 messages]}
 */
export function conversationBody(protocol: ConversationProtocol, turn: number, rollout: string, options: ConversationOptions = {}): Uint8Array {
  const resultBytes = options.resultBytes ?? 1000;
  const shots = options.screenshots ?? [];
  const keep = options.keepScreenshots ?? Infinity;
  // The screenshot turn t's result shows, if it is still sent on this turn.
  const shotAt = (t: number) => (shots.length > 0 && turn - t <= keep ? shots[(t - 1) % shots.length] : undefined);
  const system = textOf(`system ${rollout}`, 2000);
  const tools = [0, 1, 2].map((i) => ({ name: `tool_${i}`, description: textOf(`tool ${i}`, 300), parameters: { type: "object", properties: { arg: { type: "string" } } } }));
  const body: { [key: string]: unknown } = { model: "qwen3-8b" };
  const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value, null, options.space));
  if (protocol === "completions" || protocol === "completions-ids") {
    let prompt = system;
    for (let t = 1; t < turn; t++) prompt += textOf(`turn ${t}`, resultBytes);
    body.prompt = protocol === "completions" ? prompt : Array.from(prompt, (c) => c.charCodeAt(0) % 151000);
    return encode({ ...body, max_tokens: 100, ...options.extra });
  }
  const turns = [];
  for (let t = 1; t < turn; t++) turns.push(t);
  if (protocol === "chat") {
    const messages: unknown[] = [{ role: "system", content: system }, { role: "user", content: textOf(`task ${rollout}`, 400) }];
    for (const t of turns) {
      messages.push({ role: "assistant", content: null, tool_calls: [{ id: `call_${t}`, type: "function", function: { name: "tool_1", arguments: JSON.stringify({ arg: textOf(`args ${t}`, 80) }) } }] });
      const shot = shotAt(t);
      messages.push({ role: "tool", tool_call_id: `call_${t}`, content: textOf(`result ${t}`, resultBytes) });
      if (shot) messages.push({ role: "user", content: [{ type: "text", text: "screen:" }, { type: "image_url", image_url: { url: `data:image/png;base64,${shot}` } }] });
      else if (shots.length > 0) messages.push({ role: "user", content: "[screenshot omitted]" });
    }
    return encode({ ...body, messages, tools: tools.map((f) => ({ type: "function", function: f })), stream: true, ...options.extra });
  }
  if (protocol === "anthropic") {
    const messages: unknown[] = [{ role: "user", content: [{ type: "text", text: textOf(`task ${rollout}`, 400) }] }];
    for (const t of turns) {
      messages.push({ role: "assistant", content: [{ type: "text", text: textOf(`thinking ${t}`, 60) }, { type: "tool_use", id: `toolu_${t}`, name: "tool_1", input: { arg: textOf(`args ${t}`, 80) } }] });
      const shot = shotAt(t);
      const content: unknown[] = [{ type: "text", text: textOf(`result ${t}`, resultBytes) }];
      if (shot) content.push({ type: "image", source: { type: "base64", media_type: "image/png", data: shot } });
      else if (shots.length > 0) content.push({ type: "text", text: "[screenshot omitted]" });
      messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${t}`, content }] });
    }
    return encode({ ...body, max_tokens: 1024, system: [{ type: "text", text: system, cache_control: { type: "ephemeral" } }], messages, tools: tools.map((f) => ({ name: f.name, description: f.description, input_schema: f.parameters })), stream: true, ...options.extra });
  }
  const input: unknown[] = [{ role: "user", content: [{ type: "input_text", text: textOf(`task ${rollout}`, 400) }] }];
  for (const t of turns) {
    input.push({ type: "function_call", call_id: `fc_${t}`, name: "tool_1", arguments: JSON.stringify({ arg: textOf(`args ${t}`, 80) }) });
    input.push({ type: "function_call_output", call_id: `fc_${t}`, output: textOf(`result ${t}`, resultBytes) });
    const shot = shotAt(t);
    if (shot) input.push({ type: "computer_call_output", call_id: `cc_${t}`, output: { type: "computer_screenshot", image_url: `data:image/png;base64,${shot}` } });
    else if (shots.length > 0) input.push({ role: "user", content: [{ type: "input_text", text: "[screenshot omitted]" }] });
  }
  return encode({ ...body, instructions: system, input, tools: tools.map((f) => ({ type: "function", ...f })), stream: true, ...options.extra });
}

/**
 * Distinct screenshots as base64 texts: real PNGs (the simulator sizes images as the model's
 * processor does, and refuses bytes that are no image, as vLLM does) of exactly `bytes` bytes
 * (at least 200), their pixels noise from the tag, stored uncompressed.
 *
 * @example
 * const [a, b] = screenshots(2, 30_000);
 */
export function screenshots(count: number, bytes: number, tag = "shot"): string[] {
  const width = 32;
  // 57 bytes of PNG framing, 6 of zlib, 5 per 64 KiB stored block, 14 of tEXt at least.
  const height = Math.max(1, Math.floor((bytes - 100 - 5 * Math.ceil(bytes / 65_535)) / (1 + width * 3)));
  return Array.from({ length: count }, (_, k) => rgbPng(width, height, expectedBody(`${tag}-${k}`, width * height * 3), { stored: true, size: bytes }).toString("base64"));
}
