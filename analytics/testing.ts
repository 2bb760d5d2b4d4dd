/**
 * Test helpers of the analytics area, for test code only: builders for hand-written records
 * (rollouts, results and model calls in the three tool-calling protocols, plain and streamed,
 * shaped as the real APIs shape them), a data directory whose log segments are given as record
 * arrays and read through a SegmentReader instead of the recorder (the segment files hold only
 * a placeholder), and headless Chromium for the render tests.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, Protocol, RecordSchema, RolloutStatus, TokenStatus, type Record } from "../schemas/index.ts";
import type { SegmentReader } from "./compact.ts";

const encoder = new TextEncoder();
const json = (value: unknown) => encoder.encode(JSON.stringify(value));

export type RolloutSpec = {
  id: string;
  task: string;
  experiment?: string;
  iteration?: number;
  harness?: string;
  attempt?: number;
  policyVersion?: number;
  createdUnixMs?: number;
  labels?: { [key: string]: string };
};

export function rolloutRecord(spec: RolloutSpec): Record {
  return create(RecordSchema, {
    kind: {
      case: "rollout",
      value: {
        rolloutId: spec.id,
        experiment: spec.experiment ?? "exp",
        iteration: spec.iteration ?? 0,
        taskId: spec.task,
        group: `${spec.task}@${spec.policyVersion ?? 0}`,
        attempt: spec.attempt ?? 0,
        harness: spec.harness ?? "codex",
        createdUnixMs: spec.createdUnixMs ?? 1_000 + (spec.attempt ?? 0),
        policyVersion: spec.policyVersion ?? 0,
        labels: spec.labels ?? {},
      },
    },
  });
}

const statuses = { ok: RolloutStatus.OK, failed: RolloutStatus.FAILED, infra_error: RolloutStatus.INFRA_ERROR, timeout: RolloutStatus.TIMEOUT };

export function resultRecord(id: string, status: keyof typeof statuses, reward: number): Record {
  return create(RecordSchema, {
    kind: { case: "rolloutResult", value: { rolloutId: id, status: statuses[status], reward, finishedUnixMs: 5_000 } },
  });
}

/** A rollout and its result in one go: `[rollout, result]`. */
export function scored(spec: RolloutSpec, status: keyof typeof statuses, reward: number): Record[] {
  return [rolloutRecord(spec), resultRecord(spec.id, status, reward)];
}

/** A tool call the model makes, and (optionally) the result the harness sends back next turn. */
export type ToolStep = { id: string; name: string; args: unknown; result?: string; isError?: boolean };

export type CallSpec = {
  rollout: string;
  seq: number;
  protocol: "chat" | "responses" | "anthropic";
  stream?: boolean;
  tools: string[];
  /** Results of earlier steps that the request carries (the history). */
  history: ToolStep[];
  /** Tool calls in this response. */
  calls: ToolStep[];
  text?: string;
  usage?: { prompt: number; completion: number };
  latencyMs?: number;
  ttftMs?: number;
  /** Token ids as a train-mode proxy records them (token_status COMPLETE); none: not requested. */
  tokens?: { prompt: number[]; completion: number[]; logprobs?: number[] };
  startUnixMs?: number;
};

function chatBodies(spec: CallSpec) {
  const messages: unknown[] = [{ role: "user", content: "fix the bug" }];
  for (const step of spec.history) {
    messages.push({ role: "assistant", content: null, tool_calls: [{ id: step.id, type: "function", function: { name: step.name, arguments: JSON.stringify(step.args) } }] });
    messages.push({ role: "tool", tool_call_id: step.id, content: step.result ?? "" });
  }
  const request = { model: "m", messages, tools: spec.tools.map((name) => ({ type: "function", function: { name, parameters: {} } })) };
  const toolCalls = spec.calls.map((step) => ({ id: step.id, type: "function", function: { name: step.name, arguments: JSON.stringify(step.args) } }));
  if (!spec.stream) {
    return { request, response: json({ choices: [{ index: 0, message: { role: "assistant", content: spec.text ?? null, tool_calls: toolCalls }, finish_reason: "tool_calls" }] }) };
  }
  const chunks: unknown[] = [{ choices: [{ index: 0, delta: { role: "assistant", content: spec.text ?? "" } }] }];
  spec.calls.forEach((step, index) => {
    const args = JSON.stringify(step.args);
    const half = Math.floor(args.length / 2);
    chunks.push({ choices: [{ index: 0, delta: { tool_calls: [{ index, id: step.id, type: "function", function: { name: step.name, arguments: args.slice(0, half) } }] } }] });
    chunks.push({ choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: args.slice(half) } }] } }] });
  });
  const sse = chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("") + "data: [DONE]\n\n";
  return { request, response: encoder.encode(sse) };
}

function responsesBodies(spec: CallSpec) {
  const input: unknown[] = [{ type: "message", role: "user", content: [{ type: "input_text", text: "fix the bug" }] }];
  for (const step of spec.history) {
    input.push({ type: "function_call", call_id: step.id, name: step.name, arguments: JSON.stringify(step.args) });
    const output = step.isError === undefined ? step.result ?? "" : JSON.stringify({ output: step.result ?? "", metadata: { exit_code: step.isError ? 1 : 0 } });
    input.push({ type: "function_call_output", call_id: step.id, output });
  }
  const request = { model: "m", input, tools: spec.tools.map((name) => ({ type: "function", name, parameters: {} })) };
  const output: unknown[] = [];
  if (spec.text) output.push({ type: "message", role: "assistant", content: [{ type: "output_text", text: spec.text }] });
  for (const step of spec.calls) output.push({ type: "function_call", id: `fc_${step.id}`, call_id: step.id, name: step.name, arguments: JSON.stringify(step.args) });
  if (!spec.stream) return { request, response: json({ id: "resp", object: "response", output }) };
  const events = [
    { type: "response.created", response: { id: "resp", output: [] } },
    ...output.map((item, output_index) => ({ type: "response.output_item.done", output_index, item })),
    { type: "response.completed", response: { id: "resp", output } },
  ];
  const sse = events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join("");
  return { request, response: encoder.encode(sse) };
}

function anthropicBodies(spec: CallSpec) {
  const messages: unknown[] = [{ role: "user", content: "fix the bug" }];
  for (const step of spec.history) {
    messages.push({ role: "assistant", content: [{ type: "tool_use", id: step.id, name: step.name, input: step.args }] });
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: step.id, content: [{ type: "text", text: step.result ?? "" }], is_error: step.isError ?? false }] });
  }
  const request = { model: "m", max_tokens: 1024, messages, tools: spec.tools.map((name) => ({ name, input_schema: { type: "object" } })) };
  const content: unknown[] = [];
  if (spec.text) content.push({ type: "text", text: spec.text });
  for (const step of spec.calls) content.push({ type: "tool_use", id: step.id, name: step.name, input: step.args });
  if (!spec.stream) return { request, response: json({ id: "msg", type: "message", role: "assistant", content, stop_reason: "tool_use" }) };
  const events: unknown[] = [{ type: "message_start", message: { id: "msg", content: [] } }];
  content.forEach((block, index) => {
    const b = block as { type: string; text?: string; input?: unknown };
    if (b.type === "text") {
      events.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
      events.push({ type: "content_block_delta", index, delta: { type: "text_delta", text: b.text } });
    } else {
      events.push({ type: "content_block_start", index, content_block: { ...b, input: {} } });
      const args = JSON.stringify(b.input);
      events.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: args.slice(0, 3) } });
      events.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: args.slice(3) } });
    }
    events.push({ type: "content_block_stop", index });
  });
  events.push({ type: "message_stop" });
  const sse = events.map((event) => `event: ${(event as { type: string }).type}\ndata: ${JSON.stringify(event)}\n\n`).join("");
  return { request, response: encoder.encode(sse) };
}

const protocols = { chat: Protocol.CHAT, responses: Protocol.RESPONSES, anthropic: Protocol.ANTHROPIC_MESSAGES };

/** One ModelCall record in the given protocol. */
export function callRecord(spec: CallSpec): Record {
  const bodies = spec.protocol === "chat" ? chatBodies(spec) : spec.protocol === "responses" ? responsesBodies(spec) : anthropicBodies(spec);
  const usage = spec.usage ?? { prompt: 100, completion: 10 };
  return create(RecordSchema, {
    kind: {
      case: "modelCall",
      value: {
        rolloutId: spec.rollout,
        seq: spec.seq,
        callId: `${spec.rollout}-${spec.seq}`,
        startUnixMs: spec.startUnixMs ?? 1_000 + spec.seq * 100,
        endUnixMs: (spec.startUnixMs ?? 1_000 + spec.seq * 100) + (spec.latencyMs ?? 50),
        protocol: protocols[spec.protocol],
        requestBody: json(bodies.request),
        responseBody: bodies.response,
        model: "m",
        stream: spec.stream ?? false,
        httpStatus: 200,
        status: 1,
        usage: { promptTokens: usage.prompt, completionTokens: usage.completion, totalTokens: usage.prompt + usage.completion },
        latencyMs: spec.latencyMs ?? 50,
        ttftMs: spec.ttftMs ?? 0,
        ...(spec.tokens
          ? {
              promptTokenIds: spec.tokens.prompt,
              completionTokenIds: spec.tokens.completion,
              completionLogprobs: spec.tokens.logprobs ?? spec.tokens.completion.map(() => -0.1),
              promptLen: spec.tokens.prompt.length,
              tokenStatus: TokenStatus.COMPLETE,
            }
          : {}),
      },
    },
  });
}

/**
 * All calls of one agent episode: step i's tool calls are made in call i+1 and their results
 * arrive in the request of call i+2; a final call answers with text.
 */
export function episode(rollout: string, protocol: CallSpec["protocol"], tools: string[], steps: ToolStep[][], stream = false): Record[] {
  const records: Record[] = [];
  const history: ToolStep[] = [];
  steps.forEach((calls, index) => {
    records.push(callRecord({ rollout, seq: index + 1, protocol, stream, tools, history: [...history], calls }));
    history.push(...calls);
  });
  records.push(callRecord({ rollout, seq: steps.length + 1, protocol, stream, tools, history: [...history], calls: [], text: "done" }));
  return records;
}

/** Async iterable over records, as a segment reader yields them. */
export async function* fromArray(records: Record[]): AsyncIterable<Record> {
  for (const record of records) yield record;
}

export type FakeLog = { dir: string; reads: string[]; readSegment: SegmentReader; addSegment(records: Record[]): Promise<string> };

/**
 * A data dir with `log/seg-*.forge` placeholders; `reads` lists every segment read.
 *
 * @example
 * const log = await fakeLog(); await log.addSegment(records);
 * await openAnalytics(log.dir, { readSegment: log.readSegment });
 */
export async function fakeLog(): Promise<FakeLog> {
  const dir = await mkdtemp(join(tmpdir(), "forge-analytics-"));
  await mkdir(join(dir, "log"), { recursive: true });
  const segments = new Map<string, Record[]>();
  const reads: string[] = [];
  return {
    dir,
    reads,
    readSegment: (_logDir, segment) => {
      reads.push(segment);
      const records = segments.get(segment);
      if (!records) throw new Error(`fake log: no segment ${segment}`);
      return fromArray(records);
    },
    async addSegment(records) {
      const name = `seg-${String(segments.size + 1).padStart(8, "0")}.forge`;
      segments.set(name, records);
      await writeFile(join(dir, "log", name), `FORGESG1${records.length}`);
      return name;
    },
  };
}

/** Headless Chromium for the render tests (`apt-get install -y chromium`); tests skip, saying so, without it. */
export const chromiumPath = "/usr/bin/chromium";

/**
 * Opens a local HTML file (or an http URL) in headless Chromium: the DOM after scripts ran, and a screenshot.
 *
 * @example
 * const { dom } = await headlessChromium("/tmp/report.html", "/tmp/report.png");
 */
export async function headlessChromium(file: string, screenshot: string, windowSize = "1280,2400"): Promise<{ dom: string; code: number }> {
  const profile = await mkdtemp(join(tmpdir(), "forge-chromium-"));
  try {
    const proc = Bun.spawn(
      [
        chromiumPath, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage", `--user-data-dir=${profile}`, `--window-size=${windowSize}`,
        `--screenshot=${screenshot}`, "--dump-dom", /^https?:\/\//.test(file) ? file : `file://${file}`,
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const timer = setTimeout(() => proc.kill(), 90_000);
    const [dom, code] = [await new Response(proc.stdout).text(), await proc.exited];
    clearTimeout(timer);
    return { dom, code };
  } finally {
    await rm(profile, { recursive: true, force: true });
  }
}
