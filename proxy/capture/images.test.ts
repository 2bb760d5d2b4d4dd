import { expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { decodeDataUrl, findImages, imageCacheStats } from "./images.ts";

const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]).toString("base64");
const sha = createHash("sha256").update(Buffer.from(png, "base64")).digest("hex");

test("finds base64 and URL images in all three protocols, once per sha256", () => {
  const chat = { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${png}` } }, { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } }] }] };
  const anthropic = {
    messages: [
      { role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: png } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: [{ type: "image", source: { type: "url", url: "https://x/a.png" } }] }] },
    ],
  };
  const responses = { input: [{ role: "user", content: [{ type: "input_image", image_url: `data:image/png;base64,${png}` }] }, { type: "function_call_output", call_id: "c", output: [{ type: "input_image", image_url: "https://x/b.png" }] }] };
  for (const [body, urls] of [[chat, []], [anthropic, ["https://x/a.png"]], [responses, ["https://x/b.png"]]] as const) {
    const found = findImages(body);
    expect(found.inline.map((i) => [i.sha256, i.mediaType, i.data.length])).toEqual([[sha, "image/png", 7]]);
    expect(found.urls).toEqual([...urls]);
  }
});

test("decodeDataUrl ignores non-base64 data URLs", () => {
  expect(decodeDataUrl("data:text/plain,hello")).toBeUndefined();
  expect(decodeDataUrl("https://x")).toBeUndefined();
  expect(findImages({ type: "image_url", image_url: "data:text/plain,hi" })).toEqual({ inline: [], urls: [] });
});

test("decodeDataUrl: media type and base64 flag as in RFC 2397", () => {
  expect(decodeDataUrl("data:image/png,aGk=")).toBeUndefined(); // not base64: the text is the data
  expect(decodeDataUrl("data:image/png;base64")).toBeUndefined(); // no comma
  expect(decodeDataUrl("data:;base64,aGk=")).toEqual({ mediaType: "application/octet-stream", data: new Uint8Array([104, 105]) });
  expect(decodeDataUrl("data:image/jpeg;name=a,b;base64,aGk=")).toBeUndefined(); // the flag must come before the first comma
  expect(decodeDataUrl("data:image/jpeg;charset=x;base64,aGk=,")?.mediaType).toBe("image/jpeg");
});

// A distinct image per test: the sha256 cache is process-wide.
const image = (tag: string, size: number): { bytes: Buffer; base64: string; sha256: string } => {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + tag.charCodeAt(i % tag.length)) & 0xff;
  return { bytes, base64: bytes.toString("base64"), sha256: createHash("sha256").update(bytes).digest("hex") };
};
const chatWith = (...base64: string[]) => ({ messages: [{ role: "user", content: base64.map((b) => ({ type: "image_url", image_url: { url: `data:image/png;base64,${b}` } })) }] });

test("a base64 text seen before is not decoded or hashed again; data is decoded when read", () => {
  const a = image("a", 300_000);
  const before = imageCacheStats();
  const first = findImages(chatWith(a.base64)).inline;
  expect(imageCacheStats()).toMatchObject({ hits: before.hits, misses: before.misses + 1 });
  // A fresh copy of the text, as JSON.parse of the next request gives.
  const again = findImages(JSON.parse(JSON.stringify(chatWith(a.base64)))).inline;
  expect(imageCacheStats()).toMatchObject({ hits: before.hits + 1, misses: before.misses + 1 });
  for (const found of [first, again]) {
    expect(found.map((i) => [i.sha256, i.mediaType])).toEqual([[a.sha256, "image/png"]]);
    expect(Buffer.from(found[0]!.data).equals(a.bytes)).toBe(true);
  }
  expect(again[0]!.data).toBe(again[0]!.data); // decoded once, then kept
});

test("the cache keeps content addressing exact: same-length texts of different images differ", () => {
  const [b, c] = [image("b", 5000), image("c", 5000)];
  expect(b.base64.length).toBe(c.base64.length);
  for (let round = 0; round < 2; round++) {
    const found = findImages(chatWith(b.base64, c.base64, b.base64)).inline;
    expect(found.map((i) => i.sha256)).toEqual([b.sha256, c.sha256]);
    expect(found.map((i) => Buffer.from(i.data).equals(i.sha256 === b.sha256 ? b.bytes : c.bytes))).toEqual([true, true]);
  }
});

test("an Anthropic base64 source shares the cache with a data URL of the same image", () => {
  const d = image("d", 2000);
  findImages(chatWith(d.base64));
  const before = imageCacheStats();
  const found = findImages({ messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/webp", data: d.base64 } }] }] }).inline;
  expect(imageCacheStats().hits).toBe(before.hits + 1);
  expect(found.map((i) => [i.sha256, i.mediaType])).toEqual([[d.sha256, "image/webp"]]);
  expect(Buffer.from(found[0]!.data).equals(d.bytes)).toBe(true);
});
