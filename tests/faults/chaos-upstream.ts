/**
 * A misbehaving inference server for the fault tests: speaks enough of vLLM's OpenAI API
 * (chat completions, stream and not, with `prompt_token_ids` / `token_ids`) to be a proxy's
 * upstream, and misbehaves on demand. The fault is chosen by a marker in the request body
 * (`chaos:<fault>[:<n>]`, e.g. in the user message), because the body is what reaches the
 * upstream unchanged through every front door.
 *
 * It is built on node:http rather than Bun.serve because the faults need the raw socket
 * (destroy it mid-stream, stop writing, send bytes that are not valid chunked SSE).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export type ChaosFault =
  /** A normal answer (the default when no marker is found). */
  | "ok"
  /** Stream n chunks, then destroy the socket (the server process died). */
  | "die"
  /** Destroy the socket before any byte of the answer (connection reset). */
  | "reset"
  /** Stream n chunks, then send nothing more and keep the socket open. */
  | "stall"
  /** Send nothing at all: no headers (a hung server). */
  | "hang"
  /** 500 with an OpenAI error body. */
  | "500"
  /** 429 with `Retry-After: 1`. */
  | "429"
  /** 429 for the first n attempts of this body, then a normal answer (tests safe retries). */
  | "429then"
  /** Stream n good chunks, then a `data:` line that is not JSON, then `[DONE]`. */
  | "malformed"
  /** Non-stream: 200 with a Content-Type of JSON and a body cut in the middle of an object. */
  | "truncated"
  /** Stream n chunks without `[DONE]` and end the response cleanly (no finish_reason). */
  | "nodone"
  /** A normal stream whose token ids do not fit the record's uint32 (2^33). */
  | "badids"
  /** A stream request answered with a whole JSON body (the server ignored `stream: true`). */
  | "jsonstream"
  /** A normal stream, then n more chunks with token ids after `[DONE]`. */
  | "afterdone"
  /** A stream of n chunks of 16 KiB of text each, then the usual end. */
  | "huge";

export interface ChaosRequest {
  fault: ChaosFault;
  n: number;
  path: string;
  body: string;
  headers: IncomingMessage["headers"];
  /** Which attempt of the same body this is (1 = first). */
  attempt: number;
}

export interface ChaosUpstream {
  /** `http://127.0.0.1:PORT` (the OpenAI base URL is this + "/v1"). */
  url: string;
  requests: ChaosRequest[];
  /** Sockets currently open (a stalled stream keeps one). */
  openSockets(): number;
  stop(): Promise<void>;
}

const MARKER = /chaos:([a-z0-9]+)(?::(\d+))?/;
const TOKEN_BASE = 1000;

/** The fault a request body asks for. */
export function faultOf(body: string): { fault: ChaosFault; n: number } {
  const m = MARKER.exec(body);
  if (!m) return { fault: "ok", n: 0 };
  return { fault: m[1] as ChaosFault, n: m[2] ? Number(m[2]) : 3 };
}

/** The marker a test puts in a prompt to get `fault`. */
export function chaosMarker(fault: ChaosFault, n?: number): string {
  return `chaos:${fault}${n === undefined ? "" : `:${n}`}`;
}

function promptIds(body: string): number[] {
  // Deterministic stand-in for tokenisation: one id per 4 bytes of the body.
  const ids: number[] = [];
  for (let i = 0; i < Math.min(body.length, 4096); i += 4) ids.push(TOKEN_BASE + (body.charCodeAt(i) % 500));
  return ids;
}

function chunk(id: string, delta: Record<string, unknown>, tokenIds: number[] | undefined, finish: string | null, extra: Record<string, unknown> = {}): string {
  return `data: ${JSON.stringify({
    id,
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "chaos",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish, ...(tokenIds ? { token_ids: tokenIds } : {}) }],
    ...extra,
  })}\n\n`;
}

/**
 * Starts the chaos upstream on 127.0.0.1, port 0.
 *
 * @example
 * const up = await startChaosUpstream({ chunks: 8, chunkDelayMs: 5 });
 * // prompt "… chaos:die:3 …" → three chunks, then the socket is destroyed
 * await up.stop();
 */
export async function startChaosUpstream(options: { chunks?: number; chunkDelayMs?: number } = {}): Promise<ChaosUpstream> {
  const chunks = options.chunks ?? 8;
  const delay = options.chunkDelayMs ?? 2;
  const requests: ChaosRequest[] = [];
  const attempts = new Map<string, number>();
  const sockets = new Set<Socket>();
  let counter = 0;

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on("data", (b: Buffer) => parts.push(b));
    req.on("end", () => void handle(req, res, Buffer.concat(parts).toString("utf8")));
  });
  server.keepAliveTimeout = 1000;
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });

  async function handle(req: IncomingMessage, res: ServerResponse, body: string) {
    const path = req.url ?? "/";
    if (req.method === "GET" && (path === "/health" || path === "/v1/models")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(path === "/health" ? {} : { object: "list", data: [{ id: "chaos", object: "model", owned_by: "chaos" }] }));
      return;
    }
    const { fault, n } = faultOf(body);
    const attempt = (attempts.get(body) ?? 0) + 1;
    attempts.set(body, attempt);
    requests.push({ fault, n, path, body, headers: req.headers, attempt });
    let parsed: Record<string, any> = {};
    try {
      parsed = JSON.parse(body);
    } catch {}
    const stream = parsed.stream === true && fault !== "jsonstream";
    const wantIds = parsed.return_token_ids === true;
    const id = `chatcmpl-chaos-${++counter}`;
    const sock = req.socket;

    if (fault === "reset") return void sock.destroy();
    if (fault === "hang") return; // never answers; the socket is closed by stop()
    if (fault === "500" || fault === "429" || (fault === "429then" && attempt <= n)) {
      const status = fault === "500" ? 500 : 429;
      res.writeHead(status, { "content-type": "application/json", ...(status === 429 ? { "retry-after": "1" } : {}) });
      res.end(JSON.stringify({ error: { message: status === 500 ? "chaos: internal error" : "chaos: rate limited", type: status === 500 ? "server_error" : "rate_limit_error", code: null, param: null } }));
      return;
    }
    const count = fault === "huge" ? n : chunks;
    const ids = Array.from({ length: count }, (_, i) => (fault === "badids" ? 2 ** 33 + i : TOKEN_BASE + 600 + i));
    const words = ids.map((_, i) => (fault === "huge" ? `w${i} ${"x".repeat(16 * 1024)} ` : `w${i} `));
    if (!stream) {
      const answer = JSON.stringify({
        id,
        object: "chat.completion",
        created: 1_700_000_000,
        model: "chaos",
        choices: [{ index: 0, message: { role: "assistant", content: words.join("") }, logprobs: null, finish_reason: "stop", ...(wantIds ? { token_ids: ids } : {}) }],
        usage: { prompt_tokens: promptIds(body).length, completion_tokens: chunks, total_tokens: promptIds(body).length + chunks },
        ...(wantIds ? { prompt_token_ids: promptIds(body) } : {}),
      });
      if (fault === "truncated") {
        const cut = answer.slice(0, Math.floor(answer.length / 2));
        res.writeHead(200, { "content-type": "application/json", "content-length": String(cut.length) });
        res.end(cut);
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(answer);
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.write(chunk(id, { role: "assistant", content: "" }, wantIds ? [] : undefined, null, wantIds ? { prompt_token_ids: promptIds(body) } : {}));
    const stopAt = fault === "die" || fault === "stall" || fault === "malformed" || fault === "nodone" ? Math.min(n, chunks) : count;
    for (let i = 0; i < stopAt; i++) {
      await Bun.sleep(delay);
      if (res.destroyed) return;
      res.write(chunk(id, { content: words[i] }, wantIds ? [ids[i]!] : undefined, null));
    }
    if (fault === "die") return void sock.destroy();
    if (fault === "stall") return; // keeps the socket open, sends nothing more
    if (fault === "malformed") {
      res.write('data: {"id": "broken", "choices": [{"delta": {"content": "x"\n\n');
      res.end("data: [DONE]\n\n");
      return;
    }
    if (fault === "nodone") return void res.end();
    await Bun.sleep(delay);
    res.write(chunk(id, {}, wantIds ? [] : undefined, "stop"));
    res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 1_700_000_000, model: "chaos", choices: [], usage: { prompt_tokens: promptIds(body).length, completion_tokens: count, total_tokens: promptIds(body).length + count } })}\n\n`);
    if (fault === "afterdone") {
      res.write("data: [DONE]\n\n");
      for (let i = 0; i < n; i++) res.write(chunk(id, { content: `after-done-${i} ` }, wantIds ? [TOKEN_BASE + 900 + i] : undefined, null));
      res.end();
      return;
    }
    res.end("data: [DONE]\n\n");
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    openSockets: () => sockets.size,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
