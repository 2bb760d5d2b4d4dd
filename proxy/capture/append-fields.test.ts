import { describe, expect, test } from "bun:test";
import { appendFields, appendFieldsBody, BodyParts, PARTS_MIN_BYTES } from "./append-fields.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const append = (text: string, fields: Record<string, unknown>) => dec(appendFields(enc(text), JSON.parse(text), fields));

describe("appendFields", () => {
  test("adds the fields after the last member, keeping the original bytes as they were", () => {
    const text = '{ "model":"m", "messages":[{"role":"user","content":"é \\u00e9"}] }';
    const out = append(text, { return_token_ids: true, logprobs: true, stream_options: { include_usage: true } })!;
    expect(out.startsWith('{ "model":"m", "messages":[{"role":"user","content":"é \\u00e9"}] ')).toBe(true);
    expect(JSON.parse(out)).toEqual({ ...JSON.parse(text), return_token_ids: true, logprobs: true, stream_options: { include_usage: true } });
  });

  test("an empty object, whitespace and newlines around the closing brace", () => {
    expect(JSON.parse(append("{}", { a: 1 })!)).toEqual({ a: 1 });
    expect(JSON.parse(append(" {\n} \n", { a: 1 })!)).toEqual({ a: 1 });
    expect(JSON.parse(append('{"x":{}}\r\n', { a: [1] })!)).toEqual({ x: {}, a: [1] });
  });

  test("a key the body already has is not appended (undefined: the caller re-serialises)", () => {
    expect(append('{"logprobs":false}', { logprobs: true })).toBeUndefined();
    expect(append('{"stream_options":{}}', { stream_options: { include_usage: true } })).toBeUndefined();
  });

  test("nothing to add gives the same bytes; bytes that do not end with } give undefined", () => {
    const bytes = enc('{"a":1}');
    expect(appendFields(bytes, { a: 1 }, {})).toBe(bytes);
    expect(appendFields(enc('{"a":1}x'), { a: 1 }, { b: 2 })).toBeUndefined();
    expect(appendFields(enc(""), {}, { b: 2 })).toBeUndefined();
  });

  test("a large body is its parts, with the same bytes as appendFields whether joined or streamed; a small one is bytes", async () => {
    const text = `{"model":"m","messages":[{"role":"user","content":"${"é".repeat(PARTS_MIN_BYTES)}"}]} \n`;
    const parsed = JSON.parse(text);
    const fields = { return_token_ids: true, logprobs: true };
    const bytes = enc(text);
    const body = appendFieldsBody(bytes, parsed, fields);
    expect(body).toBeInstanceOf(BodyParts);
    const parts = body as BodyParts;
    const expected = [...appendFields(enc(text), parsed, fields)!];
    expect(parts.byteLength).toBe(expected.length);
    expect([...parts.bytes()]).toEqual(expected);
    // The harness's bytes are a view, not a copy.
    expect(parts.parts[0]!.buffer).toBe(bytes.buffer);
    // Streamed twice (the client's next upstream), the same bytes each time.
    for (let i = 0; i < 2; i++) expect([...new Uint8Array(await new Response(parts.stream()).arrayBuffer())]).toEqual(expected);
    const small = appendFieldsBody(enc('{"a":1}'), { a: 1 }, { b: 2 });
    expect(small).toBeInstanceOf(Uint8Array);
    expect(dec(small as Uint8Array)).toBe('{"a":1,"b":2}');
    const large = enc(text);
    expect(appendFieldsBody(large, parsed, {})).toBe(large);
    expect(appendFieldsBody(large, parsed, { model: "x" })).toBeUndefined();
  });
});
