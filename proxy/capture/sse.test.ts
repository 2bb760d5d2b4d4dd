import { describe, expect, test } from "bun:test";
import { createSseRewriter } from "./sse.ts";

const enc = (s: string) => new TextEncoder().encode(s);

describe("createSseRewriter", () => {
  test("keeps, replaces and drops whole events split anywhere", () => {
    const seen: string[] = [];
    const r = createSseRewriter((data) => {
      seen.push(data);
      if (data === "drop") return "";
      if (data === "keep") return undefined;
      return `data: ${data}!\n\n`;
    });
    const input = "data: keep\n\ndata: drop\n\ndata: x\r\n\r\n: ping\n\ndata: a\ndata: b\n\n";
    let out = "";
    for (let i = 0; i < input.length; i += 3) out += r.push(enc(input.slice(i, i + 3)));
    out += r.end();
    expect(seen).toEqual(["keep", "drop", "x", "a\nb"]);
    expect(out).toBe("data: keep\n\ndata: x!\n\n: ping\n\ndata: a\nb!\n\n");
  });

  test("an unterminated last event is handled at end", () => {
    const r = createSseRewriter(() => undefined);
    expect(r.push(enc("data: [DONE]"))).toBe("");
    expect(r.end()).toBe("data: [DONE]");
  });

  test("multi-byte characters split across chunks survive", () => {
    const r = createSseRewriter(() => undefined);
    const bytes = enc("data: héllo\n\n");
    expect(r.push(bytes.slice(0, 8)) + r.push(bytes.slice(8)) + r.end()).toBe("data: héllo\n\n");
  });
});
