import { expect, test } from "bun:test";
import { createSseDecoder, parseSseJson, parseSseText, sseEvent } from "./sse.ts";

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

test("framing round-trips through the decoder, multi-line data as several data lines", () => {
  const payloads = ['{"a":1}', "line one\nline two", "", "x\r\ny"];
  const text = payloads.map((p, i) => sseEvent(p, i % 2 ? "e" : undefined)).join("");
  expect(text.startsWith('data: {"a":1}\n\nevent: e\ndata: line one\ndata: line two\n\n')).toBe(true);
  expect(parseSseText(text)).toEqual([{ data: '{"a":1}' }, { event: "e", data: "line one\nline two" }, { data: "" }, { event: "e", data: "x\ny" }]);
});

test("a bare CR ends a line too (the SSE grammar allows it)", () => {
  expect(parseSseText("data: a\r\rdata: b\r\r")).toEqual([{ data: "a" }, { data: "b" }]);
});

test("parseSseJson skips [DONE] and a torn last event", () => {
  expect(parseSseJson('event: x\ndata: {"a":1}\n\ndata: [DONE]\n\ndata: {"b":')).toEqual([{ event: "x", data: { a: 1 } }]);
});

test("parseSseJson joins multi-line data and accepts CRLF, and skips an empty data line", () => {
  expect(parseSseJson('data: {"a":\r\ndata: 2}\r\n\r\ndata:\n\n')).toEqual([{ event: null, data: { a: 2 } }]);
});
