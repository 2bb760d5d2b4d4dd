/**
 * The simulator's resolved context, shared by the route handlers (options.ts builds it). A leaf:
 * the flavours read only its FlavourContext part, so nothing here imports a flavour's code.
 */
import type { PolicyScript } from "../schemas/index.ts";
import type { ModelSpec, VisionProcessor } from "../model/index.ts";
import type { EngineFlavour, FlavourContext } from "./flavours/types.ts";
import type { ToolCallFormat } from "./generate.ts";
import type { SimSample } from "./types.ts";

export interface SimContext extends FlavourContext {
  seed: number;
  script: PolicyScript;
  model: string;
  ttftMs: number;
  samples: SimSample[];
  record(sample: SimSample): void;
  log(line: string): void;
  /** How answers are written. */
  flavour: EngineFlavour;
  /** The model served: its template, tokenizer and parsers (model/). */
  modelSpec: ModelSpec;
  /** How the model writes tool calls. */
  toolFormat: ToolCallFormat;
  /** Whether the model thinks (it has a reasoning parser); a request may still turn it off. */
  thinks: boolean;
  /** How the engine's processor sizes images on the generate routes (images.ts). */
  imageProcessor: VisionProcessor;
  /** vLLM: started with --enable-scale-out (its /inference/v1/generate route). */
  scaleOut: boolean;
  /** SGLang: started with --incremental-streaming-output (each streamed /generate event holds only what is new). */
  incrementalStreaming: boolean;
}
