import { describe, expect, test } from "bun:test";
import { createSseRewriter } from "./sse-rewriter.ts";
import { parseSseText } from "../../lib/testing.ts";

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

  test("stop() drops everything after the event that called it, in the same read and later ones", () => {
    const seen: string[] = [];
    const r = createSseRewriter((data) => {
      seen.push(data);
      if (data === "[DONE]") {
        r.stop();
        return "";
      }
      return undefined;
    });
    expect(r.push(enc("data: a\n\ndata: [DONE]\n\n: comment\n\ndata: late\n\n"))).toBe("data: a\n\n");
    expect(r.push(enc("data: later\n\n"))).toBe("");
    expect(r.end()).toBe("");
    expect(seen).toEqual(["a", "[DONE]"]);
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

  test("one event per read (the fast path) gives what byte-by-byte feeding gives", () => {
    const events = ['data: {"a":"é"}\n\n', "data: keep\n\n", "data: x\r\n\r\n", ": ping\n\n", "data: a\ndata: b\n\n", "data: [DONE]\n\n"];
    const handler = (data: string) => (data === "keep" ? undefined : `data: <${data}>\n\n`);
    const whole = createSseRewriter(handler);
    const byByte = createSseRewriter(handler);
    let a = "";
    let b = "";
    for (const e of events) {
      a += whole.push(enc(e));
      for (const byte of enc(e)) b += byByte.push(new Uint8Array([byte]));
    }
    expect(a + whole.end()).toBe(b + byByte.end());
    expect(a).toContain('data: <{"a":"é"}>\n\n');
  });

  test("a whole event after a read that ended inside a character is not taken apart from it", () => {
    const seen: string[] = [];
    const r = createSseRewriter((data) => (seen.push(data), undefined));
    const bytes = enc("data: 1\n\ndata: é\n\n");
    const cut = bytes.indexOf(0xc3) + 1; // inside the two bytes of é
    r.push(bytes.slice(0, cut));
    r.push(bytes.slice(cut));
    r.push(enc("data: 2\n\n"));
    r.end();
    expect(seen).toEqual(["1", "é", "2"]);
  });

  test("several events per read give what byte-by-byte feeding gives (every mix, stop, bad UTF-8)", () => {
    const events = ['data: {"a":"é"}\n\n', "data: keep\n\n", "data: \n\n", "data: drop\n\n", ": ping\n\n", "data: a\ndata: b\n\n", "data:x\n\n", "event: e\ndata: y\n\n", "data: 中😀\n\n", "data: \uFEFFbom\n\n"];
    const bad = new Uint8Array([...enc("data: "), 0xe4, 0xb8, ...enc("\n\n")]); // a character cut short
    const handler = (data: string) => (data === "keep" ? undefined : data === "drop" ? "" : `data: <${data}>\n\n`);
    let seed = 3;
    const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    for (let round = 0; round < 200; round++) {
      const picked = Array.from({ length: 1 + Math.floor(rand() * 6) }, () => (rand() < 0.1 ? bad : enc(events[Math.floor(rand() * events.length)]!)));
      const reads: Uint8Array[] = [];
      for (let k = 0; k < picked.length; ) {
        const n = 1 + Math.floor(rand() * 3);
        reads.push(new Uint8Array(picked.slice(k, k + n).flatMap((e) => [...e])));
        k += n;
      }
      const whole = createSseRewriter(handler);
      const byByte = createSseRewriter(handler);
      let a = "";
      let b = "";
      for (const read of reads) {
        a += whole.push(read);
        for (const byte of read) b += byByte.push(new Uint8Array([byte]));
      }
      expect(a + whole.end()).toBe(b + byByte.end());
    }
  });

  test("long events over many reads, cut anywhere (a blank line too), give the events an SSE parser reads", () => {
    // Events long enough to span reads, as vLLM's first chunk with a long prompt's ids does: the
    // held text is searched only where it grows, so a blank line cut between reads must still end its event.
    let seed = 11;
    const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    const event = (): string => {
      const body = `{"ids":[${Array.from({ length: 1 + Math.floor(rand() * 900) }, (_, i) => i).join(",")}],"é":"中"}`;
      const pick = rand();
      if (pick < 0.15) return `data: ${body}\r\n\r\n`;
      if (pick < 0.25) return `data: ${body}\ndata: more\n\n`;
      if (pick < 0.3) return ": ping\n\n";
      return `data: ${body}\n\n`;
    };
    for (let round = 0; round < 150; round++) {
      const text = Array.from({ length: 1 + Math.floor(rand() * 5) }, event).join("");
      const bytes = enc(text);
      const seen: string[] = [];
      const r = createSseRewriter((data) => (seen.push(data), undefined));
      let out = "";
      for (let at = 0; at < bytes.length; ) {
        const n = 1 + Math.floor(rand() * (rand() < 0.5 ? 8 : 4096));
        out += r.push(bytes.slice(at, at + n));
        at += n;
      }
      out += r.end();
      expect(seen).toEqual(parseSseText(text).map((m) => m.data));
      expect(out).toBe(text);
    }
  });

  test("stop() inside a read of several events drops the rest of it", () => {
    const seen: string[] = [];
    const r = createSseRewriter((data) => {
      seen.push(data);
      if (data === "[DONE]") r.stop();
      return data === "[DONE]" ? "" : undefined;
    });
    expect(r.push(enc("data: a\n\ndata: [DONE]\n\ndata: late\n\n"))).toBe("data: a\n\n");
    expect(r.push(enc("data: later\n\n"))).toBe("");
    expect(seen).toEqual(["a", "[DONE]"]);
  });
});
