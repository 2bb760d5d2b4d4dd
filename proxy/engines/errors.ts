/**
 * Error bodies as the engines write them, read into one shape. vLLM (and OpenAI) nest them:
 * `{"error": {"message", "type", "param", "code"}}`; SGLang's OpenAI routes write them flat:
 * `{"object": "error", "message", "type", "param", "code"}`; SGLang's native routes and vLLM's
 * RL routes write `{"error": "text"}` or `{"error": {"message"}}`.
 */

/** An engine's error, whatever shape it came in. */
export interface EngineError {
  message: string;
  type: string | null;
  param: string | null;
  code: string | number | null;
  /** The body was already the OpenAI shape (`{"error": {...}}`), so it can be passed on as is. */
  nested: boolean;
}

/**
 * The error in an engine's JSON body, or undefined when the body is no error.
 *
 * @example
 * engineError({ object: "error", message: "bad", type: "BadRequest", param: null, code: 400 })?.message // "bad"
 * engineError({ error: { message: "no", type: "BadRequestError", param: "n", code: 400 } })?.nested // true
 */
export function engineError(body: unknown): EngineError | undefined {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return undefined;
  const b = body as Record<string, any>;
  const e = b.error;
  if (typeof e === "string") return { message: e, type: null, param: null, code: null, nested: false };
  if (e && typeof e === "object") {
    const message = typeof e.message === "string" ? e.message : JSON.stringify(e);
    return { message, type: stringOrNull(e.type), param: stringOrNull(e.param), code: e.code ?? null, nested: typeof e.message === "string" };
  }
  if (b.object === "error" && typeof b.message === "string") {
    return { message: b.message, type: stringOrNull(b.type), param: stringOrNull(b.param), code: b.code ?? null, nested: false };
  }
  return undefined;
}

/**
 * The OpenAI-shaped body for an engine error (what a Chat or Completions harness expects).
 *
 * @example
 * openAiShape({ message: "bad", type: "BadRequest", param: null, code: 400, nested: false })
 * // { error: { message: "bad", type: "BadRequest", param: null, code: 400 } }
 */
export function openAiShape(e: EngineError): { error: { message: string; type: string; param: string | null; code: string | number | null } } {
  return { error: { message: e.message, type: e.type ?? "upstream_error", param: e.param, code: e.code } };
}

function stringOrNull(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}
