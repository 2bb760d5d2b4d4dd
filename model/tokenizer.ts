/**
 * A model's tokenizer from its `tokenizer.json` and `tokenizer_config.json`, built by
 * `@lenml/tokenizers` (the JavaScript port of Hugging Face's tokenizers): `encode` is
 * `tokenizer.encode(text, add_special_tokens=False)` of transformers, `decode` keeps special
 * tokens. Building Qwen3's (11 MB tokenizer.json) takes about a second, so each model
 * directory's tokenizer is built once per process, on first use.
 *
 * Encoding caches the pieces between added tokens: Hugging Face's tokenizers split the text
 * at added tokens (`<|im_start|>`, `<tool_call>`, …: none is normalized or strips spaces
 * in the models here) before normalizing and pre-tokenizing each piece on its own, so the ids
 * of a text are exactly the ids of its pieces and added tokens in order. A harness's system
 * prompt and tools are one piece that repeats on every call of a rollout.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { byteDecoder, ownCopy } from "../lib/index.ts";

export interface Tokenizer {
  /** Text → ids as `encode(text, add_special_tokens=False)`: added tokens written in the text become their ids. */
  encode(text: string): number[];
  /** Ids → text, special tokens kept (`skip_special_tokens=False`). */
  decode(ids: number[]): string;
  /** Raw UTF-8 bytes of one token (byte-level BPE undone). */
  tokenBytes(id: number): number[];
  /** The id of a token written as text (`<think>`, `<|im_end|>`), if the vocabulary has it. */
  tokenId(token: string): number | undefined;
  /** The added tokens the configuration marks special (vLLM drops these from parsed output). */
  specialTokens: ReadonlyMap<string, number>;
  /** Milliseconds the first load took. */
  loadMs: number;
}

interface AddedToken {
  id: number;
  content: string;
  special: boolean;
  normalized?: boolean;
  lstrip?: boolean;
  rstrip?: boolean;
  single_word?: boolean;
}

const loading = new Map<string, Promise<Tokenizer>>();

/**
 * The tokenizer of a model directory (`tokenizer.json` + `tokenizer_config.json`); the first
 * call builds it, later calls resolve at once.
 *
 * @example
 * const tokenizer = await loadTokenizerFrom(QWEN3.dir);
 * tokenizer.encode("Hello"); // [9707]
 */
export function loadTokenizerFrom(dir: string): Promise<Tokenizer> {
  let pending = loading.get(dir);
  if (!pending) {
    pending = build(dir);
    loading.set(dir, pending);
  }
  return pending;
}

async function build(dir: string): Promise<Tokenizer> {
  const started = performance.now();
  const json = readJson(join(dir, "tokenizer.json"));
  const config = readJson(join(dir, "tokenizer_config.json"));
  const { TokenizerLoader } = await import("@lenml/tokenizers");
  const inner = TokenizerLoader.fromPreTrained({ tokenizerJSON: json as never, tokenizerConfig: config as never }) as unknown as {
    encode(text: string, options: { add_special_tokens: boolean }): number[];
    decode(ids: number[], options: { skip_special_tokens: boolean }): string;
    model: BpeModel;
  };
  releaseBuildInput(inner.model);
  const added = ((json as { added_tokens?: AddedToken[] }).added_tokens ?? []).slice();
  for (const token of added) {
    // The piece cache is exact only for added tokens matched verbatim (see the header).
    if (token.normalized || token.lstrip || token.rstrip || token.single_word) {
      throw new Error(`${join(dir, "tokenizer.json")}: added token ${JSON.stringify(token.content)} is normalized or strips spaces; model/tokenizer.ts caches pieces between added tokens and does not support that yet`);
    }
  }
  const addedIds = new Map(added.map((t) => [t.content, t.id]));
  const specialTokens = new Map(added.filter((t) => t.special).map((t) => [t.content, t.id]));
  // Leftmost-longest, as the tokenizers library matches added tokens.
  const splitter = added.length
    ? new RegExp(
        added
          .map((t) => t.content)
          .sort((a, b) => b.length - a.length)
          .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
          .join("|"),
        "g",
      )
    : undefined;
  const vocab = inner.model.vocab;
  const byteOf = byteDecoder();
  const addedText = new Map(added.map((t) => [t.id, t.content]));
  const utf8 = new TextEncoder();
  const bytesCache = new Map<number, number[]>();
  const pieces = pieceCache();

  const encodePiece = (piece: string): number[] => {
    let ids = pieces.get(piece);
    if (!ids) {
      ids = inner.encode(piece, { add_special_tokens: false });
      pieces.set(piece, ids);
    }
    return ids;
  };

  return {
    encode(text) {
      if (text === "") return [];
      if (!splitter) return encodePiece(text).slice();
      const out: number[] = [];
      let at = 0;
      splitter.lastIndex = 0;
      for (const m of text.matchAll(splitter)) {
        if (m.index > at) for (const id of encodePiece(text.slice(at, m.index))) out.push(id);
        out.push(addedIds.get(m[0])!);
        at = m.index + m[0].length;
      }
      if (at < text.length) for (const id of encodePiece(text.slice(at))) out.push(id);
      return out;
    },
    decode: (ids) => (ids.length === 0 ? "" : inner.decode(ids, { skip_special_tokens: false })),
    tokenBytes(id) {
      let bytes = bytesCache.get(id);
      if (bytes) return bytes;
      const special = addedText.get(id);
      if (special !== undefined) bytes = [...utf8.encode(special)];
      else bytes = [...(vocab[id] ?? "")].map((ch) => byteOf.get(ch) ?? 0x3f);
      bytesCache.set(id, bytes);
      return bytes;
    },
    tokenId: (token) => addedIds.get(token) ?? inner.model.tokens_to_ids.get(token),
    specialTokens,
    loadMs: performance.now() - started,
  };
}

/** What model/ reads of the library's BPE model, and the construction input it keeps. */
interface BpeModel {
  vocab: string[];
  tokens_to_ids: Map<string, number>;
  merges?: unknown[];
  config?: Record<string, unknown>;
}

/**
 * Lets the collector free what the BPE model was built from. It keeps tokenizer.json's `model`
 * section (the vocabulary as an object of 151k properties, the merges as 151k pairs of strings)
 * though it encodes and decodes from `tokens_to_ids`, `vocab` and `bpe_ranks` alone (the merges
 * are read in its constructor only): for Qwen3 that is ~340k strings and 151k arrays that every
 * full collection of the proxy marks again (docs/performance.md, "eleventh session").
 */
function releaseBuildInput(model: BpeModel): void {
  model.merges = [];
  if (model.config) model.config = { ...model.config, vocab: undefined, merges: undefined };
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new Error(`model: cannot read ${path}: ${(error as Error).message} (a model directory holds tokenizer.json and tokenizer_config.json)`);
  }
}

/**
 * Encoded pieces, bounded: long ones (at least 32 characters: a system prompt, the tools, a
 * tool result sent again) by their characters (a bench sends 200 KB prompts), short ones (the
 * role names and newlines between a chat template's added tokens, which every appended turn
 * writes: "user\n", "assistant\n", "\n") by their count, apart, so that long pieces passing
 * through do not push them out. A short piece costs the library's whole encode path (its
 * normalizer, pre-tokenizer and post-processor) for a few ids.
 */
function pieceCache() {
  const cache = new Map<string, number[]>();
  const short = new Map<string, number[]>();
  const MAX_ENTRIES = 4096;
  const MAX_SHORT = 4096;
  const MAX_CHARS = 16 * 1024 * 1024;
  let chars = 0;
  return {
    get: (piece: string) => (piece.length < 32 ? short.get(piece) : cache.get(piece)),
    set(piece: string, ids: number[]) {
      if (piece.length < 32) {
        if (short.size >= MAX_SHORT) short.delete(short.keys().next().value!);
        // A key of its own: a slice would hold the whole text it was cut from (a prompt) alive.
        short.set(ownCopy(piece), ids);
        return;
      }
      if (piece.length > MAX_CHARS / 8) return;
      while (cache.size > 0 && (cache.size >= MAX_ENTRIES || chars + piece.length > MAX_CHARS)) {
        const oldest = cache.keys().next().value!;
        chars -= oldest.length;
        cache.delete(oldest);
      }
      cache.set(piece, ids);
      chars += piece.length;
    },
  };
}
