import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { QWEN2_5_VL_PROCESSOR, qwen25VlDir } from "../../model/index.ts";
import { visionOfDir } from "./vision-dir.ts";
import { tokenInOptions } from "./spec.ts";

describe("a model directory's images (preprocessor_config.json)", () => {
  test("Qwen2.5-VL's Qwen2VLImageProcessor: the placeholder, expanded with its sizes; token-in options carry it", () => {
    expect(visionOfDir(qwen25VlDir())).toEqual({ placeholder: "<|vision_start|><|image_pad|><|vision_end|>", expand: { token: "<|image_pad|>", processor: QWEN2_5_VL_PROCESSOR } });
    expect(tokenInOptions({ modelDir: qwen25VlDir() }).model.images?.expand?.processor).toEqual(QWEN2_5_VL_PROCESSOR);
  });

  test("no file: a text model; another processor: named as unsupported; a bad file: the error names it", () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-vision-dir-"));
    try {
      expect(visionOfDir(dir)).toBeUndefined();
      writeFileSync(join(dir, "preprocessor_config.json"), JSON.stringify({ image_processor_type: "SiglipImageProcessor" }));
      expect(visionOfDir(dir)?.unsupported).toMatch(/^SiglipImageProcessor \(.*preprocessor_config\.json\)$/);
      expect(visionOfDir(dir)?.expand).toBeUndefined();
      writeFileSync(join(dir, "preprocessor_config.json"), JSON.stringify({ image_processor_type: "Qwen2VLImageProcessor", max_pixels: -1 }));
      expect(() => visionOfDir(dir, "tokenIn.modelDir")).toThrow(/tokenIn.modelDir: .*preprocessor_config.json: max_pixels must be a positive integer, got -1/);
      writeFileSync(join(dir, "preprocessor_config.json"), "{");
      expect(() => visionOfDir(dir)).toThrow(/--model-dir: .*preprocessor_config.json is not JSON/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
