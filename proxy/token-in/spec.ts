/**
 * The model a token-in proxy renders and parses for, from its settings (`forge proxy --token-in
 * --model-dir DIR`, `spec.policy.tokenIn` in an experiment): the directory with the model's
 * `tokenizer.json` and `tokenizer_config.json` (its chat template), and the parsers the engine
 * is started with (vLLM's `--tool-call-parser`, `--reasoning-parser`).
 */
import { existsSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { QWEN3, QWEN3_CODER, QWEN2_5_VL_IMAGES, registeredParserNames, type ModelSpec } from "../../model/index.ts";
import { visionOfDir } from "./vision-dir.ts";
import type { TokenInOptions } from "./index.ts";
import type { TokenInRoute } from "./engine-request.ts";

/** What `--token-in-route` and `spec.policy.tokenIn.route` take. */
export const TOKEN_IN_ROUTE_SETTINGS = ["auto", "completions", "generate"] as const;

export interface TokenInSettings {
  /**
   * The model directory; "qwen3" is the Qwen3 tokenizer and template OpenForge ships (the
   * simulator's, which takes images as Qwen2.5-VL does), "qwen3-coder" Qwen3-Coder's template over that tokenizer (the simulator's
   * `qwen3_coder` model; its parsers default to qwen3_coder and none).
   */
  modelDir: string;
  /** Default hermes (Qwen3's). */
  toolParser?: string;
  /** Default qwen3; "none" for a model without one. */
  reasoningParser?: string;
  /** The engine's context length; default: the upstream's /v1/models max_model_len. */
  maxModelLen?: number;
  /** The shard's ceiling on the ids its open rollouts' chains hold (proxy/token-in/held.ts). */
  maxHeldTokens?: number;
  /** Where a vLLM engine gets the calls: "auto" (default: "generate" where served), "completions" or "generate" (engine-request.ts, route-probe.ts). */
  route?: string;
}

/** Settings that cannot work; the message names the setting and the fix. */
export class TokenInSettingsError extends Error {
  override name = "TokenInSettingsError";
}

/**
 * Token-in options from settings, checked: the directory holds the tokenizer files, the parsers
 * are known by vLLM's names.
 *
 * @example
 * tokenInOptions({ modelDir: "qwen3" }).model.toolParser // "hermes"
 */
export function tokenInOptions(settings: TokenInSettings, what = { modelDir: "--model-dir", toolParser: "--tool-call-parser", reasoningParser: "--reasoning-parser", maxModelLen: "--max-model-len" }): TokenInOptions {
  const builtIn = settings.modelDir === "qwen3-coder" ? QWEN3_CODER : QWEN3;
  const toolParser = settings.toolParser ?? builtIn.toolParser;
  const reasoning = settings.reasoningParser ?? builtIn.reasoningParser ?? "none";
  const known = registeredParserNames();
  if (!known.tool.includes(toolParser)) throw new TokenInSettingsError(`${what.toolParser}: no tool-call parser "${toolParser}"; known: ${known.tool.join(", ")}`);
  if (reasoning !== "none" && !known.reasoning.includes(reasoning)) throw new TokenInSettingsError(`${what.reasoningParser}: no reasoning parser "${reasoning}"; known: ${known.reasoning.join(", ")} (or none)`);
  if (settings.maxModelLen !== undefined && !(Number.isInteger(settings.maxModelLen) && settings.maxModelLen > 0)) throw new TokenInSettingsError(`${what.maxModelLen}: expected a positive integer, got ${settings.maxModelLen}`);
  if (settings.maxHeldTokens !== undefined && !(Number.isInteger(settings.maxHeldTokens) && settings.maxHeldTokens > 0)) throw new TokenInSettingsError(`--max-held-tokens: expected a positive integer, got ${settings.maxHeldTokens}`);
  if (settings.route !== undefined && !TOKEN_IN_ROUTE_SETTINGS.includes(settings.route as never)) {
    throw new TokenInSettingsError(`--token-in-route: expected auto (the default: generate where the engine serves it), completions or generate (vLLM's /inference/v1/generate, served with --enable-scale-out), got "${settings.route}"`);
  }
  let dir: string;
  let name: string;
  let chatTemplate: string | undefined;
  if (settings.modelDir === "qwen3" || settings.modelDir === "qwen3-coder") {
    dir = builtIn.dir;
    name = builtIn.name;
    chatTemplate = builtIn.chatTemplate;
  } else {
    dir = resolve(settings.modelDir);
    name = basename(dir);
    for (const file of ["tokenizer.json", "tokenizer_config.json"]) {
      if (!existsSync(join(dir, file))) throw new TokenInSettingsError(`${what.modelDir}: ${join(dir, file)} is missing; token-in mode needs the served model's tokenizer.json and tokenizer_config.json (its chat template), e.g. the model's Hugging Face directory`);
    }
  }
  // Images: the simulator's Qwen3 takes them as Qwen2.5-VL does; a directory's from its preprocessor_config.json.
  const images = settings.modelDir === "qwen3" ? QWEN2_5_VL_IMAGES : settings.modelDir === "qwen3-coder" ? undefined : visionOfDir(dir, what.modelDir);
  const model: ModelSpec = { name, dir, toolParser, reasoningParser: reasoning === "none" ? null : reasoning, ...(chatTemplate ? { chatTemplate } : {}), ...(images ? { images } : {}) };
  return { model, ...(settings.maxModelLen ? { maxModelLen: settings.maxModelLen } : {}), ...(settings.maxHeldTokens ? { maxHeldTokens: settings.maxHeldTokens } : {}), ...(settings.route !== undefined && settings.route !== "auto" ? { route: settings.route as TokenInRoute } : {}) };
}
