import { describe, expect, test } from "bun:test";
import { ChatRequestError, loadModel, QWEN2_5_VL_IMAGES, QWEN3 } from "./index.ts";
import { QWEN_VL_IMAGES } from "./model.ts";
import { solidPng } from "./testing.ts";
import { imageDimensions, imageTokenCount, ImageSizeError, pyRound, QWEN2_5_VL_PROCESSOR, QWEN2_VL_PROCESSOR, smartResize } from "./vision.ts";

describe("smart_resize as transformers computes it", () => {
  test("Python's round: halves go to the even neighbour", () => {
    expect([0.5, 1.5, 2.5, 3.5, 2.4999, 2.5001].map(pyRound)).toEqual([0, 2, 2, 4, 2, 3]);
  });

  test("a 1280x720 screenshot: 728x1288, 52x92 patches, 1196 tokens (Qwen2.5-VL)", () => {
    expect(smartResize(720, 1280, 28, 3136, 12845056)).toEqual([728, 1288]);
    expect(imageTokenCount(720, 1280, QWEN2_5_VL_PROCESSOR)).toBe(1196);
  });

  test("a dimension exactly between two multiples rounds to the even one (70/28 = 2.5 → 56, not 84)", () => {
    expect(smartResize(42, 70, 28, 3136, 12845056)).toEqual([56, 56]);
    expect(imageTokenCount(42, 70, QWEN2_5_VL_PROCESSOR)).toBe(4);
  });

  test("scaled up to min_pixels and down to max_pixels", () => {
    expect(smartResize(10, 10, 28, 3136, 12845056)).toEqual([56, 56]);
    // 4000x5000 is 20 M pixels: over Qwen2-VL's default 1,003,520, scaled down keeping the ratio.
    const [h, w] = smartResize(4000, 5000, 28, QWEN2_VL_PROCESSOR.minPixels, QWEN2_VL_PROCESSOR.maxPixels);
    expect(h * w).toBeLessThanOrEqual(QWEN2_VL_PROCESSOR.maxPixels);
    expect([h % 28, w % 28]).toEqual([0, 0]);
  });

  test("an aspect ratio over 200 is refused, as transformers raises", () => {
    expect(() => smartResize(1, 300, 28, 3136, 12845056)).toThrow(ImageSizeError);
  });
});

describe("image sizes from bytes", () => {
  test("a PNG data: URL and raw bytes", () => {
    const png = solidPng(33, 17);
    expect(imageDimensions(png)).toEqual({ width: 33, height: 17 });
    expect(imageDimensions(`data:image/png;base64,${png.toString("base64")}`)).toEqual({ width: 33, height: 17 });
  });

  test("a remote URL or bytes that are no image are errors naming why", () => {
    expect(() => imageDimensions("https://example.com/a.png")).toThrow(/only data: URLs/);
    expect(() => imageDimensions("data:image/png;base64,aGk=")).toThrow(/cannot read the image's size/);
  });
});

describe("prompt ids of a vision model", () => {
  test("each image's <|image_pad|> is repeated as its processor sizes it; the text keeps one", async () => {
    const vl = await loadModel({ ...QWEN3, images: QWEN2_5_VL_IMAGES });
    const one = await loadModel({ ...QWEN3, images: QWEN_VL_IMAGES });
    const pad = vl.tokenizer.encode("<|image_pad|>")[0]!;
    const part = (w: number, h: number) => ({ type: "image_url", image_url: { url: `data:image/png;base64,${solidPng(w, h).toString("base64")}` } });
    const request = { messages: [{ role: "user", content: [{ type: "text", text: "look" }, part(1280, 720), part(70, 42)] }] };
    expect(vl.renderChat(request)).toBe(one.renderChat(request));
    const ids = vl.renderChatIds(request);
    expect(ids.filter((id) => id === pad).length).toBe(1196 + 4);
    // The rest of the prompt is the text's tokens, in order.
    expect(ids.filter((id) => id !== pad)).toEqual(one.renderChatIds(request).filter((id) => id !== pad));
    expect(one.renderChatIds(request).filter((id) => id === pad).length).toBe(2);
  });

  test("an image it cannot size, or text spelling the image token, is a request error", async () => {
    const vl = await loadModel({ ...QWEN3, images: QWEN2_5_VL_IMAGES });
    expect(() => vl.renderChatIds({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://x/y.png" } }] }] })).toThrow(ChatRequestError);
    const png = `data:image/png;base64,${solidPng(8, 8).toString("base64")}`;
    expect(() => vl.renderChatIds({ messages: [{ role: "user", content: [{ type: "text", text: "<|image_pad|>" }, { type: "image_url", image_url: { url: png } }] }] })).toThrow(/2 <\|image_pad\|> tokens for 1 images/);
  });
});
