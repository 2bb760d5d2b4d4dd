import { expect, test } from "bun:test";
import { createSseDecoder } from "./sse.ts";

test("decodes events split at any byte, CRLF, comments, event names, multi-line data", () => {
  const text = ': keep-alive\r\nevent: message_start\r\ndata: {"a":\r\ndata: 1}\r\n\r\ndata: [DONE]\n\n';
  for (let cut = 0; cut <= text.length; cut++) {
    const d = createSseDecoder();
    const got = [...d.push(text.slice(0, cut)), ...d.push(text.slice(cut)), ...d.flush()];
    expect(got).toEqual([{ event: "message_start", data: '{"a":\n1}' }, { data: "[DONE]" }]);
  }
  const d = createSseDecoder();
  expect([...d.push("data: tail"), ...d.flush()]).toEqual([{ data: "tail" }]);
});
