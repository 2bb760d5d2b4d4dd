import { describe, expect, test } from "bun:test";
import { bodySpans, scannedBodySpans } from "./body-spans.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** The text of each span. */
const texts = (body: string, options = {}) => {
  const bytes = encoder.encode(body);
  const spans = bodySpans(bytes, { minPiece: 1, ...options });
  if (!spans) return undefined;
  const text = (s: { start: number; end: number }) => decoder.decode(bytes.subarray(s.start, s.end));
  return { pieces: spans.pieces.map(text), base64: spans.cuts.filter((c) => c.base64).map(text), strings: spans.cuts.filter((c) => !c.base64).map(text), elements: spans.pieces.map((p) => p.element) };
};

describe("bodySpans", () => {
  test("each element of messages / input, every other top-level value", () => {
    expect(texts('{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],"tools":[{"x":1}],"stream":true}')).toEqual({
      pieces: ['"m"', '{"role":"user","content":"a"}', '{"role":"assistant","content":"b"}', '[{"x":1}]', "true"],
      base64: [],
      strings: [],
      elements: [false, true, true, false, false],
    });
    expect(texts('{"instructions":"sys","input":["x",{"type":"function_call_output","output":"y"}]}')!.pieces).toEqual(['"sys"', '"x"', '{"type":"function_call_output","output":"y"}']);
    // input as a string is one value
    expect(texts('{"input":"hello"}')!.pieces).toEqual(['"hello"']);
  });

  test("whitespace anywhere, escapes and nested brackets inside strings", () => {
    const body = ' \n{ "messages" : [ {"c":"a \\" ] } [ {"} ,\t{"c":"\\\\"} ] ,"n": -1.5e3 , "o":{"a":[1,{"b":null}]} }\n ';
    expect(texts(body)!.pieces).toEqual(['{"c":"a \\" ] } [ {"}', '{"c":"\\\\"}', "-1.5e3", '{"a":[1,{"b":null}]}']);
  });

  test("values shorter than minPiece stay literal", () => {
    expect(texts('{"model":"m","messages":[{"r":"a"},{"role":"assistant","content":"long enough"}]}', { minPiece: 20 })!.pieces).toEqual(['{"role":"assistant","content":"long enough"}']);
  });

  test("base64 candidates: data: URL payloads and strings under a data key, at any depth", () => {
    const b64 = "QUJD".repeat(20);
    const body = JSON.stringify({
      messages: [
        { content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${b64}` } }] },
        { content: [{ type: "tool_result", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: b64 } }] }] },
        { content: [{ type: "image_url", image_url: { url: `data:image/png,${b64}` } }] }, // not base64: the text is the data
        { content: [{ type: "text", text: b64 }] }, // not under "data"
        { content: [{ type: "image_url", image_url: { url: "data:image/png;base64,QUJD" } }] }, // too short
      ],
      input: [{ type: "computer_call_output", output: { type: "computer_screenshot", image_url: `data:image/jpeg;name=x;base64,${b64}` } }],
    });
    expect(texts(body)!.base64).toEqual([b64, b64, b64]);
  });

  test("long strings are cut out wherever they are, with their escapes; a data: URL's header is not", () => {
    const long = `${"é \" x".repeat(60)}`;
    const body = JSON.stringify({ system: long, messages: [{ role: "tool", content: long, name: "short" }, { content: [{ type: "text", text: long }] }], input: long });
    const found = texts(body, { minString: 200 })!;
    const escaped = JSON.stringify(long).slice(1, -1);
    expect(found.strings).toEqual([escaped, escaped, escaped, escaped]);
    const b64 = "QUJD".repeat(100);
    expect(texts(JSON.stringify({ messages: [{ url: `data:image/png;base64,${b64}` }, { url: `data:text/plain,${"t".repeat(300)}` }] }), { minString: 200 })).toMatchObject({ base64: [b64], strings: [`data:text/plain,${"t".repeat(300)}`] });
  });

  test("a token-id array is skipped by its first ] and kept as one value", () => {
    const ids = Array.from({ length: 5000 }, (_, i) => i).join(",");
    expect(texts(`{"prompt":[${ids}],"max_tokens":5}`)!.pieces).toEqual([`[${ids}]`, "5"]);
    // an array with strings or containers inside is walked
    expect(texts('{"prompt":[[1,2],"]"],"x":1}')!.pieces).toEqual(['[[1,2],"]"]', "1"]);
  });

  test("not a JSON object: undefined", () => {
    for (const body of ["", "[]", '"s"', "{", '{"a":1', '{"a":1}x', '{"a" 1}', '{a:1}', '{"messages":[1 2]}', '{"a":"unterminated}', '{"a":[}', '{"a":{]}', '{"a":}']) {
      expect(texts(body)).toBeUndefined();
    }
    expect(texts("{}")).toEqual({ pieces: [], base64: [], strings: [], elements: [] });
    expect(texts(" { } ")).toEqual({ pieces: [], base64: [], strings: [], elements: [] });
  });

  test("deep nesting is walked without recursion", () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    expect(texts(`{"a":${deep}}`)!.pieces).toEqual([deep]);
  });
});

describe("the messages' spans", () => {
  const messagesOf = (body: string, options = {}) => {
    const bytes = encoder.encode(body);
    return bodySpans(bytes, options)?.messages?.map((s) => decoder.decode(bytes.subarray(s.start, s.end)));
  };

  test("every element of the top-level messages array, whatever its size", () => {
    const body = '{"model":"m","messages":[{"r":"a"}, "x" ,{"role":"user","content":"a longer message"}],"input":[{"y":1}]}';
    expect(messagesOf(body, { minPiece: 32 })).toEqual(['{"r":"a"}', '"x"', '{"role":"user","content":"a longer message"}']);
    expect(messagesOf('{"messages":[]}')).toEqual([]);
    // Not read where the bytes cannot say which array JSON.parse takes, or there is none.
    expect(messagesOf('{"model":"m"}')).toBeUndefined();
    expect(messagesOf('{"messages":null}')).toBeUndefined();
    expect(messagesOf('{"messages":[{"a":1}],"messages":[{"b":2}]}')).toBeUndefined();
    expect(JSON.parse('{"messages":[{"a":1}],"m\\u0065ssages":[{"b":2}]}').messages).toEqual([{ b: 2 }]);
    expect(messagesOf('{"messages":[{"a":1}],"m\\u0065ssages":[{"b":2}]}')).toBeUndefined();
    expect(messagesOf('{"m\\u0065ssages":[{"b":2}],"messages":[{"a":1}]}')).toBeUndefined();
  });

  test("the top-level tools value, on the same terms", () => {
    const toolsOf = (body: string) => {
      const bytes = encoder.encode(body);
      const span = bodySpans(bytes, { minPiece: 64 })?.tools;
      return span && decoder.decode(bytes.subarray(span.start, span.end));
    };
    expect(toolsOf('{"model":"m","tools":[{"type":"function"}] ,"messages":[]}')).toBe('[{"type":"function"}]');
    expect(toolsOf('{"tools":null}')).toBe("null");
    expect(toolsOf('{"messages":[{"tools":[1]}]}')).toBeUndefined();
    expect(toolsOf('{"tools":[1],"tools":[2]}')).toBeUndefined();
    expect(toolsOf('{"tools":[1],"t\\u006fols":[2]}')).toBeUndefined();
  });

  test("scannedBodySpans scans a body once per options, and again for other options", () => {
    const bytes = encoder.encode('{"model":"m","messages":[{"role":"user","content":"hello there, a message"}]}');
    const first = scannedBodySpans(bytes, { minPiece: 32, minString: 256 });
    expect(scannedBodySpans(bytes, { minPiece: 32, minString: 256 })).toBe(first);
    expect(first).toEqual(bodySpans(bytes, { minPiece: 32, minString: 256 })!);
    const other = scannedBodySpans(bytes, { minPiece: 1 });
    expect(other).not.toBe(first);
    expect(other).toEqual(bodySpans(bytes, { minPiece: 1 })!);
    expect(scannedBodySpans(encoder.encode("[1]"))).toBeUndefined();
  });
});
