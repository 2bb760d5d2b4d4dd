/** Checks shared by the OpenAI-style front doors. */
import { openAiErrorBody, ProxyHttpError, type OpenAiErrorType } from "../errors.ts";
import { openAiShape, type EngineError } from "../engines/errors.ts";

/**
 * The model name, or 400 naming the field.
 *
 * @example
 * requireModel({ model: "m" }) // "m"
 */
export function requireModel(body: Record<string, any>): string {
  if (typeof body.model !== "string" || body.model === "") {
    throw new ProxyHttpError(400, "model: required, a non-empty string (the name the upstream serves)", "invalid_request_error", "invalid_value", "model");
  }
  return body.model;
}

/**
 * `stream`, which must be a boolean when present.
 *
 * @example
 * streamFlag({ stream: true }) // true
 */
export function streamFlag(body: Record<string, any>): boolean {
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== "boolean") {
    throw new ProxyHttpError(400, `stream: expected a boolean, got ${JSON.stringify(body.stream)}`, "invalid_request_error", "invalid_type", "stream");
  }
  return body.stream === true;
}

/** OpenAI error body with the front door's signature. */
export function openAiDoorError(status: number, message: string, type: string, code: string | null): unknown {
  return openAiErrorBody(status, message, type as OpenAiErrorType, code);
}

/**
 * The OpenAI error body with its type derived from the status (what the Responses API returns).
 *
 * @example
 * openaiError(400, "input[0].role: ...").error.type // "invalid_request_error"
 */
export function openaiError(status: number, message: string) {
  const type: OpenAiErrorType = status >= 500 ? "server_error" : status === 429 ? "rate_limit_error" : status === 401 ? "authentication_error" : "invalid_request_error";
  return openAiErrorBody(status, message, type);
}

/**
 * The engine's own error as an OpenAI-style door's (FrontDoor.engineErrorBody): vLLM's (OpenAI's
 * shape) as sent, SGLang's flat `{"object": "error", ...}` nested as OpenAI's.
 *
 * @example
 * passEngineError({ message: "bad", type: "BadRequest", param: null, code: 400, nested: false }, '{"object":"error",...}')
 * // '{"error":{"message":"bad","type":"BadRequest","param":null,"code":400}}'
 */
export function passEngineError(error: EngineError, text: string): string {
  return error.nested ? text : JSON.stringify(openAiShape(error));
}
