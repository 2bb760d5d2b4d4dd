/**
 * Session identifiers harnesses send, recorded in ModelCall.session so calls of one
 * harness session can be grouped even when several share a key.
 */

/** Header names (lower case) the proxy records: Codex, Claude Code, opencode, W3C tracing. */
export const SESSION_HEADERS = [
  "session-id",
  "session_id",
  "thread-id",
  "thread_id",
  "conversation_id",
  "conversation-id",
  "x-claude-code-session-id",
  "x-session-id",
  "x-opencode-session",
  "traceparent",
  "tracestate",
] as const;

/**
 * Extract the session headers present in a request.
 *
 * @example
 * sessionHeaders(new Headers({ "Session-Id": "abc", traceparent: "00-1-2-01", authorization: "x" }))
 * // { "session-id": "abc", traceparent: "00-1-2-01" }
 */
export function sessionHeaders(headers: Headers | Record<string, string | undefined>): Record<string, string> {
  const get = headers instanceof Headers ? (n: string) => headers.get(n) ?? undefined : lowerLookup(headers);
  const out: Record<string, string> = {};
  for (const name of SESSION_HEADERS) {
    const v = get(name);
    if (v !== undefined && v !== "") out[name] = v;
  }
  return out;
}

function lowerLookup(h: Record<string, string | undefined>): (n: string) => string | undefined {
  const lower = new Map(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
  return (n) => lower.get(n);
}
