import { expect, test } from "bun:test";
import { sessionHeaders } from "./session-headers.ts";

test("extracts the harnesses' session headers, case-insensitively, nothing else", () => {
  const h = new Headers({ "session-id": "s1", "Thread-Id": "t1", "x-claude-code-session-id": "cc", "x-session-id": "oc", traceparent: "00-ab-cd-01", authorization: "Bearer secret" });
  expect(sessionHeaders(h)).toEqual({ "session-id": "s1", "thread-id": "t1", "x-claude-code-session-id": "cc", "x-session-id": "oc", traceparent: "00-ab-cd-01" });
  expect(sessionHeaders({ Session_Id: "codex-old", "X-Api-Key": "k" })).toEqual({ session_id: "codex-old" });
});
