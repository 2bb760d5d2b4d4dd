import { expect, test } from "bun:test";
import { isStoredHeader, redactedHeaders } from "./headers.ts";

test("headers are stored by an allow-list: anything else is redacted, whatever its name", () => {
  const headers = new Headers({
    authorization: "Bearer fk-1",
    "x-goog-api-key": "g",
    "openai-api-key": "o",
    "anthropic-api-key": "a",
    "x-auth-token": "t",
    "x-made-up-secret": "m",
    "user-agent": "codex/1",
    "x-stainless-retry-count": "0",
    "anthropic-version": "2023-06-01",
    "session-id": "s",
  });
  const stored = Object.fromEntries(redactedHeaders(headers).map((h) => [h.name, h.value]));
  expect(stored).toEqual({
    authorization: "[redacted]",
    "x-goog-api-key": "[redacted]",
    "openai-api-key": "[redacted]",
    "anthropic-api-key": "[redacted]",
    "x-auth-token": "[redacted]",
    "x-made-up-secret": "[redacted]",
    "user-agent": "codex/1",
    "x-stainless-retry-count": "0",
    "anthropic-version": "2023-06-01",
    "session-id": "s",
  });
  expect(isStoredHeader("Content-Type")).toBe(true);
  expect(isStoredHeader("cookie")).toBe(false);
});
