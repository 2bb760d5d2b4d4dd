/**
 * Request headers as stored in a ModelCall: by an allow-list. Headers named here are stored as
 * sent; every other header is stored by name with its value replaced by "[redacted]". A list
 * of secret names would store the next credential header nobody listed (`x-goog-api-key`,
 * `openai-api-key`, `anthropic-api-key`, `x-auth-token`, a vendor's own) verbatim in the log.
 */
import type { Header } from "../../schemas/index.ts";
import { SESSION_HEADERS } from "./session-headers.ts";

/** Header names (lower case) whose values are stored: protocol, SDK and tracing metadata. */
export const STORED_HEADERS = new Set<string>([
  "accept",
  "accept-encoding",
  "accept-language",
  "anthropic-beta",
  "anthropic-version",
  "connection",
  "content-length",
  "content-type",
  "host",
  "openai-beta",
  "originator",
  "user-agent",
  "version",
  "x-request-id",
  "x-client-request-id",
  ...SESSION_HEADERS,
]);

/** Prefixes of stored header names: the official SDKs' own metadata (`x-stainless-os`, `x-stainless-retry-count`, ...). */
const STORED_PREFIXES = ["x-stainless-"];

/** The value stored in place of a header not on the allow-list. */
export const REDACTED = "[redacted]";

/**
 * Whether a header's value is stored (on the allow-list) rather than redacted.
 *
 * @example
 * isStoredHeader("User-Agent") // true
 * isStoredHeader("x-goog-api-key") // false
 */
export function isStoredHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return STORED_HEADERS.has(lower) || STORED_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

/**
 * The headers with every value not on the allow-list replaced by "[redacted]".
 *
 * @example
 * redactedHeaders(new Headers({ authorization: "Bearer fk-1", "user-agent": "x" }))
 * // [{ name: "authorization", value: "[redacted]" }, { name: "user-agent", value: "x" }]
 */
export function redactedHeaders(headers: Headers): Header[] {
  const out: Header[] = [];
  headers.forEach((value, name) => {
    // The message as create(HeaderSchema) builds it (two strings), without its reflective walk per header.
    out.push({ $typeName: "forge.v1.Header", name, value: isStoredHeader(name) ? value : REDACTED });
  });
  return out;
}
