/** Small helpers for walking untrusted JSON bodies without throwing on odd shapes. */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: unknown };

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function asString(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** Text of a content field that may be a string or a list of `{type: "text", text}` parts. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === "string" ? part : isObject(part) ? asString(part.text ?? part.output_text) : ""))
      .filter((text) => text !== "")
      .join("\n");
  }
  if (isObject(content)) return asString(content.text);
  return "";
}

/** Parses a body, returning null when it is empty or not JSON. */
export function parseJsonBody(bytes: Uint8Array): unknown {
  if (bytes.length === 0) return null;
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
}
