/** Request headers as stored in a ModelCall: secrets replaced, everything else kept. */
import { create, HeaderSchema, type Header } from "../../schemas/index.ts";

/** Header names (lower case) whose values are never stored. */
export const SECRET_HEADERS = new Set([
  "authorization",
  "proxy-authorization",
  "x-api-key",
  "api-key",
  "cookie",
  "set-cookie",
  "x-forge-admin-token",
  "openai-organization",
]);

/**
 * The headers with secret values replaced by "[redacted]".
 *
 * @example
 * redactedHeaders(new Headers({ authorization: "Bearer fk-1", "user-agent": "x" }))
 * // [{ name: "authorization", value: "[redacted]" }, { name: "user-agent", value: "x" }]
 */
export function redactedHeaders(headers: Headers): Header[] {
  const out: Header[] = [];
  headers.forEach((value, name) => {
    out.push(create(HeaderSchema, { name, value: SECRET_HEADERS.has(name.toLowerCase()) ? "[redacted]" : value }));
  });
  return out;
}
