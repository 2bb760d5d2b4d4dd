/**
 * OpenAI-style errors (`{error:{message,type,param,code}}`) the proxy answers with, and the
 * error class its layers throw to pick the status.
 */

export type OpenAiErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "not_found_error"
  | "rate_limit_error"
  | "server_error"
  | "upstream_error"
  | "timeout_error"
  | "service_unavailable";

/** A failure that maps to one HTTP status and one OpenAI-style error body. */
export class ProxyHttpError extends Error {
  override name = "ProxyHttpError";
  constructor(
    readonly status: number,
    message: string,
    readonly type: OpenAiErrorType = status >= 500 ? "server_error" : "invalid_request_error",
    readonly code: string | null = null,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * The OpenAI error body for a status and message.
 *
 * @example
 * openAiErrorBody(404, "unknown rollout ro-1", "not_found_error", "rollout_not_found")
 * // { error: { message: "unknown rollout ro-1", type: "not_found_error", param: null, code: "rollout_not_found" } }
 */
export function openAiErrorBody(
  status: number,
  message: string,
  type: OpenAiErrorType = status >= 500 ? "server_error" : "invalid_request_error",
  code: string | null = null,
  param: string | null = null,
) {
  return { error: { message, type, param, code } };
}

/**
 * A JSON Response carrying the OpenAI error body of `error`.
 *
 * @example
 * errorResponse(new ProxyHttpError(401, "missing API key", "authentication_error", "missing_api_key")).status // 401
 */
export function errorResponse(error: ProxyHttpError): Response {
  return Response.json(openAiErrorBody(error.status, error.message, error.type, error.code, error.param), {
    status: error.status,
    headers: error.headers,
  });
}
