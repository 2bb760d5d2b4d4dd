/**
 * A prompt's ids as JSON bytes, continued from the chain's last call (docs/performance.md, issue
 * 32): a call's prompt is its chain's tokens (the last prompt and its completion) and what the
 * template appends, and the last prompt's JSON was written for that call's engine request; so
 * it is kept, keyed by the chain's tokens, and the next call writes only the ids after it, into
 * the same buffer where no other call wrote past it. The engine request is then its head, these
 * bytes and its tail, copied once (`spliceInto`); the text is made only for a reader that needs
 * it (a whole JSON answer, the memo an engine's echo is read against).
 *
 * Held as bytes, not text: a text continued from the last one was a new string of the whole
 * JSON every call, then a second one with the request around it, then its bytes; now the
 * request's bytes are the only copy a call makes (docs/performance.md, issue 32's fifteenth
 * session, measures what that saves).
 *
 * Shared by the shard's rollouts and bounded by bytes (MAX_BYTES: ~4 MiB of buffers with their
 * room to grow, and the chains' token arrays it keys by): a shard whose rollouts in flight hold
 * more misses, and writes the whole JSON as before. An entry goes when its chain moves on.
 */
import { idsFrom, type TokenIds } from "../../records/index.ts";
import { WeighedMap } from "../../lib/index.ts";
import { idArray } from "./engine-request.ts";
import { IDS_PLACEHOLDER } from "./ids-text.ts";

const MAX_BYTES = 4 * 1024 * 1024;
const COMMA = 0x2c;
const CLOSE = 0x5d;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A buffer's size for `bytes` of JSON: room for the chain's next calls to write on in place (1/8 more, at least 4 KiB: a call appends ~3 KB). */
function withRoom(bytes: number): number {
  return bytes + Math.max(4096, bytes >> 3);
}

/** A buffer the JSON of successive prompts of one chain is written into, and how far any of them wrote. */
type Backing = { bytes: Uint8Array; end: number };

/**
 * The JSON of a prompt's ids: `[` and the ids with commas between them, the first `used` bytes
 * of its backing buffer (the closing `]` is added where it is written out).
 */
export class PromptJson {
  private madeText: string | undefined;

  constructor(
    private readonly backing: Backing,
    /** The bytes of `[` and the ids (no `]`). */
    readonly used: number,
    /** How many ids. */
    readonly count: number,
    text?: string,
  ) {
    this.madeText = text;
  }

  /** `JSON.stringify` of the ids, made from the bytes when first asked. */
  text(): string {
    return (this.madeText ??= `${decoder.decode(this.backing.bytes.subarray(0, this.used))}]`);
  }

  /**
   * `json` (JSON.stringify of a body with IDS_PLACEHOLDER where the ids go) as UTF-8 bytes with
   * these ids there: the body's two sides encoded, the ids copied between them.
   *
   * @example
   * promptJson.spliceInto(JSON.stringify({ token_ids: IDS_PLACEHOLDER })) // the bytes of '{"token_ids":[1,2]}'
   */
  spliceInto(json: string): Uint8Array {
    const quoted = `"${IDS_PLACEHOLDER}"`;
    const at = json.indexOf(quoted);
    if (at < 0) throw new Error("PromptJson.spliceInto: the JSON has no ids placeholder");
    const head = encoder.encode(json.slice(0, at));
    const tail = encoder.encode(json.slice(at + quoted.length));
    const out = new Uint8Array(head.length + this.used + 1 + tail.length);
    out.set(head);
    out.set(this.backing.bytes.subarray(0, this.used), head.length);
    out[head.length + this.used] = CLOSE;
    out.set(tail, head.length + this.used + 1);
    return out;
  }

  /**
   * The JSON of `prompt`, which begins with these ids: the ids after them written on, in this
   * buffer when no other prompt wrote past these ids and it has room, else in a new one.
   */
  continuedTo(prompt: TokenIds): PromptJson {
    if (prompt.length === this.count) return this;
    const rest = JSON.stringify(idsFrom(prompt, this.count));
    // `[a,b]` written where these end: its `[` over nothing (no ids yet) or as the comma after them; its `]` not kept.
    const at = this.count === 0 ? this.used - 1 : this.used;
    const used = at + rest.length - 1;
    let backing = this.backing;
    if (backing.end !== this.used || backing.bytes.length < at + rest.length) {
      const bytes = new Uint8Array(withRoom(used + 1));
      bytes.set(backing.bytes.subarray(0, at));
      backing = { bytes, end: at };
    }
    encoder.encodeInto(rest, backing.bytes.subarray(at));
    if (this.count > 0) backing.bytes[at] = COMMA;
    backing.end = used;
    return new PromptJson(backing, used, prompt.length);
  }

  /** What it holds of memory (its buffer, shared with the chain's other prompts). */
  get weight(): number {
    return this.backing.bytes.length;
  }
}

/**
 * The JSON of `prompt` written whole.
 *
 * @example
 * promptJsonOf([1, 2]).text() // "[1,2]"
 */
export function promptJsonOf(prompt: TokenIds): PromptJson {
  const text = JSON.stringify(idArray(prompt));
  // Room for the next call of the chain to write on in place.
  const bytes = new Uint8Array(withRoom(text.length));
  encoder.encodeInto(text, bytes);
  return new PromptJson({ bytes, end: text.length - 1 }, text.length - 1, prompt.length, text);
}

const held = new WeighedMap<TokenIds, PromptJson>(MAX_BYTES, MAX_BYTES / 4);

/**
 * The JSON of `prompt`, written on from the JSON kept for `base` (the chain's tokens, which
 * `prompt` begins with) when there is one.
 *
 * @example
 * chainPromptJson([1, 2, 3], chain.tokens).text() // "[1,2,3]", written from "[1,2" when that was kept for chain.tokens
 */
export function chainPromptJson(prompt: TokenIds, base: TokenIds | undefined): PromptJson {
  const kept = base === undefined ? undefined : held.get(base);
  if (!kept || kept.count > prompt.length) return promptJsonOf(prompt);
  return kept.continuedTo(prompt);
}

/**
 * Keeps `json`, the JSON of `tokens`' first `json.count` ids, for the chain's next call; drops
 * the JSON kept for `previous` (the tokens the chain had before).
 *
 * @example
 * keepPromptJson(chainTokens, promptJson, plan.chain?.tokens);
 */
export function keepPromptJson(tokens: TokenIds, json: PromptJson, previous: TokenIds | undefined): void {
  if (previous !== undefined) held.delete(previous);
  held.set(tokens, json, json.weight);
}
