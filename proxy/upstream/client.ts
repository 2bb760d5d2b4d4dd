/**
 * The upstream HTTP client shared by every front door: sends a JSON body to an upstream
 * path, waits for the answer's headers under the first-byte timeout, and retries on another
 * upstream only when nothing was received (connection refused/reset before any byte).
 */
import { ProxyHttpError } from "../errors.ts";
import type { UpstreamRouter, UpstreamState } from "./router.ts";

export interface UpstreamClientOptions {
  router: UpstreamRouter;
  /** Sent as `Authorization: Bearer` upstream (FORGE_UPSTREAM_API_KEY / OPENAI_API_KEY). */
  apiKey?: string;
  /** From sending the request to the answer's headers. Default 600 s (long non-streamed generations). */
  firstByteTimeoutMs: number;
}

export interface UpstreamAnswer {
  response: Response;
  upstream: UpstreamState;
  attempts: number;
  /** Aborts the upstream request (client went away, idle timeout). */
  abort(reason?: unknown): void;
  /** When the headers arrived (ms, performance.now()). */
  headersAt: number;
}

export interface UpstreamFailure {
  error: ProxyHttpError;
  upstream: UpstreamState | undefined;
  attempts: number;
  /** CALL_STATUS-ish reason: unreachable or timeout. */
  kind: "unreachable" | "timeout" | "aborted";
}

/** One request to an upstream: whose it is, where, what. */
export interface UpstreamRequest {
  /** Sent as `x-forge-rollout`; picks the upstream (sticky per rollout). */
  rolloutId: string;
  /** Upstream path, e.g. "/v1/chat/completions". */
  path: string;
  method: "POST" | "GET";
  /** The body: bytes, or a large body's parts (a stream of them made for each attempt, its length declared). */
  body?: Uint8Array | PartsBody;
  /** The harness's (or the rollout's cancel) signal: aborts the request. */
  signal?: AbortSignal;
  /** Added to a POST (a value of "" removes a default header, e.g. authorization). */
  headers?: Record<string, string>;
  /** The rollout's own upstreams (registered with it): they override the router's. */
  own?: UpstreamState[];
}

/** A body sent from its parts (proxy/capture/append-fields.ts, BodyParts): a fresh stream for each attempt. */
export interface PartsBody {
  readonly byteLength: number;
  stream(): ReadableStream<Uint8Array>;
  /** The parts joined: for an upstream that redirects (a stream cannot follow). */
  bytes(): Uint8Array;
}

export interface UpstreamClient {
  send(request: UpstreamRequest): Promise<UpstreamAnswer | UpstreamFailure>;
}

/**
 * A client over `router`.
 *
 * @example
 * const client = createUpstreamClient({ router, firstByteTimeoutMs: 60_000 });
 * const answer = await client.send({ rolloutId: "ro-1", path: "/v1/chat/completions", method: "POST", body: bytes });
 */
export function createUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  return {
    async send({ rolloutId, path, method, body, signal: clientSignal, headers: extraHeaders, own }) {
      // The rollout id lets an upstream tell rollouts apart (the policy simulator picks a
      // rollout's variant from it; vLLM ignores it); it is an id, not a secret.
      // The proxy's upstream key is for its own upstreams, never sent to a rollout's own.
      const postHeaders = withExtra(headers, { ...extraHeaders, "x-forge-rollout": rolloutId, ...(own?.length ? { authorization: "" } : {}) });
      const ranked = own?.length ? own : options.router.rank(rolloutId);
      let attempts = 0;
      let last: UpstreamFailure | undefined;
      for (const upstream of ranked) {
        // Already gone: its abort event has fired, and a listener added now would never hear it.
        if (clientSignal?.aborted) return { error: new ProxyHttpError(499, "client disconnected", "invalid_request_error", "client_aborted"), upstream, attempts, kind: "aborted" };
        attempts++;
        const controller = new AbortController();
        const onClientAbort = () => controller.abort(new Error("client disconnected"));
        clientSignal?.addEventListener("abort", onClientAbort, { once: true });
        let timedOut = false;
        const timer = setTimeout(() => {
          timedOut = true;
          controller.abort(new Error("first-byte timeout"));
        }, options.firstByteTimeoutMs);
        try {
          // A body of parts goes as a stream with its length declared: one Content-Length body upstream, as bytes go.
          const payload = method === "POST" ? payloadOf(body) : undefined;
          const streamed = payload instanceof ReadableStream;
          let response = await fetch(upstream.url + path, {
            method,
            headers: method === "GET" ? { accept: "application/json", ...(headers.authorization ? { authorization: headers.authorization } : {}) } : streamed ? { ...postHeaders, "content-length": String(body!.byteLength) } : postHeaders,
            body: payload,
            // A stream cannot be sent again to a redirect's target: the redirect comes back here instead.
            redirect: streamed ? "manual" : "follow",
            signal: controller.signal,
          });
          if (streamed && isRedirect(response)) {
            // Rare (an upstream behind a redirect): the body joined once, sent as bytes go, redirects followed.
            await response.body?.cancel().catch(() => {});
            response = await fetch(upstream.url + path, { method, headers: postHeaders, body: (body as PartsBody).bytes(), signal: controller.signal });
          }
          clearTimeout(timer);
          return {
            response,
            upstream,
            attempts,
            headersAt: performance.now(),
            abort: (reason) => {
              clientSignal?.removeEventListener("abort", onClientAbort);
              controller.abort(reason);
            },
          };
        } catch (error) {
          clearTimeout(timer);
          clientSignal?.removeEventListener("abort", onClientAbort);
          if (clientSignal?.aborted) {
            return { error: new ProxyHttpError(499, "client disconnected", "invalid_request_error", "client_aborted"), upstream, attempts, kind: "aborted" };
          }
          if (timedOut) {
            // A slow upstream may still be working on it: do not send the call twice.
            return {
              error: new ProxyHttpError(504, `upstream ${upstream.url} sent nothing within ${options.firstByteTimeoutMs} ms`, "timeout_error", "upstream_timeout"),
              upstream,
              attempts,
              kind: "timeout",
            };
          }
          const message = (error as Error).message;
          options.router.markDown(upstream.url, `request failed: ${message}`);
          last = {
            error: new ProxyHttpError(502, `upstream ${upstream.url} could not be reached: ${message}`, "upstream_error", "upstream_unreachable"),
            upstream,
            attempts,
            kind: "unreachable",
          };
        }
      }
      return last ?? { error: new ProxyHttpError(502, "no upstream configured", "upstream_error", "upstream_unreachable"), upstream: undefined, attempts, kind: "unreachable" };
    },
  };
}

/** A redirect `fetch` would have followed (a redirect: "manual" answer). */
function isRedirect(response: Response): boolean {
  return (response.status === 301 || response.status === 302 || response.status === 303 || response.status === 307 || response.status === 308) && response.headers.has("location");
}

/** What `fetch` sends for a body: its bytes, or a fresh stream of its parts. */
function payloadOf(body: Uint8Array | PartsBody | undefined): Uint8Array | ReadableStream<Uint8Array> | undefined {
  return body === undefined || body instanceof Uint8Array ? body : body.stream();
}

function withExtra(base: Record<string, string>, extra: Record<string, string>): Record<string, string> {
  const out = { ...base, ...extra };
  for (const [name, value] of Object.entries(out)) if (value === "") delete out[name];
  return out;
}
