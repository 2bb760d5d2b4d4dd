/**
 * model/vision.ts against transformers 5.10.4's Qwen2VLImageProcessor (run by the oracle in
 * .venv/reference): for every size of the corpus and three processors (Qwen2-VL's defaults,
 * Qwen2.5-VL's sizes, patch 16 as Qwen3-VL cuts), the number of <|image_pad|> tokens equals
 * image_grid_thw's product // merge_size² of the real processor run on an image of that size;
 * and for real PNG bytes, the size read from them is the one PIL decodes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { imageDimensions, imageTokenCount, QWEN2_5_VL_PROCESSOR, QWEN2_VL_PROCESSOR, type VisionProcessor } from "../../model/testing.ts";
import { solidPng } from "../../model/testing.ts";
import { startOracle, type Oracle } from "./oracle.ts";

const SLOW = 180_000;
let oracle: Oracle;
beforeAll(async () => {
  oracle = await startOracle();
}, SLOW);
afterAll(async () => {
  await oracle?.close();
});

const PROCESSORS: Record<string, VisionProcessor> = {
  "Qwen2-VL defaults": QWEN2_VL_PROCESSOR,
  "Qwen2.5-VL": QWEN2_5_VL_PROCESSOR,
  "patch 16 (Qwen3-VL's cut)": { patchSize: 16, mergeSize: 2, minPixels: 65536, maxPixels: 16777216 },
};

/** [width, height]: screenshots, exact halves of the factor, tiny, huge, thin. */
const SIZES: [number, number][] = [
  [1280, 720], [1920, 1080], [1366, 768], [800, 600], [390, 844], [2560, 1440], [3840, 2160],
  [70, 42], [42, 70], [14, 14], [98, 154], [16, 48], [80, 112], [1, 1], [10, 10], [55, 57],
  [5000, 4000], [6000, 6000], [4000, 20], [20, 3000], [199, 1], [1000, 5], [333, 777], [1023, 1025],
];

describe("image tokens equal transformers' Qwen2VLImageProcessor", () => {
  for (const [name, processor] of Object.entries(PROCESSORS)) {
    test(`${name}: ${SIZES.length} sizes`, async () => {
      const answer = await oracle.call({ op: "qwen_vl_image_tokens", processor, sizes: SIZES });
      expect(answer.error).toBeUndefined();
      const ours = SIZES.map(([width, height]) => imageTokenCount(height, width, processor));
      expect(ours).toEqual(answer.images.map((image: { tokens: number }) => image.tokens));
      console.log(`vision suite (${name}): ${SIZES.length} sizes checked against transformers`);
    }, SLOW);
  }

  test("an aspect ratio over 200 is refused by both", async () => {
    const answer = await oracle.call({ op: "qwen_vl_image_tokens", processor: QWEN2_5_VL_PROCESSOR, sizes: [[4096, 20]] });
    expect(answer.error).toMatch(/aspect ratio must be smaller than 200/);
    expect(() => imageTokenCount(20, 4096, QWEN2_5_VL_PROCESSOR)).toThrow(/aspect ratio must be smaller than 200/);
  }, SLOW);

  test("sizes read from PNG bytes are the ones PIL decodes", async () => {
    const pngs = [solidPng(1280, 720), solidPng(70, 42), solidPng(3, 500)];
    const answer = await oracle.call({ op: "qwen_vl_image_tokens", processor: QWEN2_5_VL_PROCESSOR, images: pngs.map((png) => png.toString("base64")) });
    expect(answer.error).toBeUndefined();
    expect(pngs.map((png) => { const { width, height } = imageDimensions(png); return [width, height]; })).toEqual(answer.images.map((image: { size: number[] }) => image.size));
    expect(pngs.map((png) => { const { width, height } = imageDimensions(png); return imageTokenCount(height, width, QWEN2_5_VL_PROCESSOR); })).toEqual(answer.images.map((image: { tokens: number }) => image.tokens));
  }, SLOW);
});
