import { expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { decodeDataUrl, findImages } from "./images.ts";

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
