/**
 * The reader side of stored bodies (docs/record-format.md, "Stored bodies"): every reader of a
 * call's request body goes through `requestBodyOf(call, store)`, which returns the harness's
 * bytes exactly, whether the record stores them whole (older logs, small bodies) or as
 * references to content pieces of earlier calls of its rollout.
 *
 * The store holds, per rollout, the pieces calls brought and each stored body as a node
 * pointing at its prefix (as prompt deltas do), so it costs what the records cost on disk; a
 * body is materialized only when asked for.
 */
import type { ModelCall, StoredBody } from "../schemas/index.ts";
import type { BodyKind } from "./content-writer.ts";

/** A literal run (bytes of a call's `literal`) or a piece (seq, index, base64). */
type Item = { literal: Uint8Array | undefined; seq: number; index: number; base64: boolean };
type BodyNode = { prefix: BodyNode | undefined; prefixItems: number; own: Item[]; count: number };
type StoredCall = { content: Uint8Array[]; request?: BodyNode; upstream?: BodyNode };
type RolloutPieces = { calls: Map<number, StoredCall>; files?: Map<string, Uint8Array> };

export interface ContentStore {
  /**
   * Takes in the pieces and stored bodies of `call`. A rollout's calls must be added in log
   * order (`requestBodyOf` adds the call it is given); adding a call again does nothing.
   */
  add(call: ModelCall): void;
  /** Drops what is held for a rollout (its bodies can no longer be rebuilt). */
  forget(rolloutId: string): void;
  /**
   * The decoded bytes of a base64 file (an image) the rollout's requests carried, by the sha256
   * in `blob_refs`; undefined when no added call stored it. Hashes the rollout's files once.
   */
  file(rolloutId: string, sha256: string): Uint8Array | undefined;
}

/** Thrown when a stored body cannot be rebuilt: its record, or one it refers to, is missing or damaged. */
export class StoredBodyError extends Error {
  override name = "StoredBodyError";
}

function where(call: ModelCall, field: string): string {
  return `call ${call.callId || "?"} (rollout ${call.rolloutId}, seq ${call.seq}) ${field}`;
}

function decodeItems(call: ModelCall, stored: StoredBody, field: string): Item[] {
  const items: Item[] = [];
  const numbers = stored.items;
  let at = 0;
  for (let i = 0; i < numbers.length; i++) {
    const n = numbers[i]!;
    if (n % 2 === 0) {
      const length = n / 2;
      if (at + length > stored.literal.length) throw new StoredBodyError(`${where(call, field)}: a literal run of ${length} bytes at ${at} is past the end of its literal (${stored.literal.length} bytes)`);
      items.push({ literal: stored.literal.subarray(at, at + length), seq: 0, index: 0, base64: false });
      at += length;
    } else {
      if (i + 1 >= numbers.length) throw new StoredBodyError(`${where(call, field)}: items end inside a piece reference`);
      items.push({ literal: undefined, index: Math.floor(n / 4), base64: (n & 2) !== 0, seq: numbers[++i]! });
    }
  }
  if (at !== stored.literal.length) throw new StoredBodyError(`${where(call, field)}: ${stored.literal.length - at} bytes of its literal are not used by its items`);
  return items;
}

/** The first `n` items of `node`, walking the prefix chain without recursion. */
function take(node: BodyNode, n: number): Item[] {
  const stack: [BodyNode, number][] = [];
  let current = node;
  let count = n;
  for (;;) {
    const fromPrefix = current.prefix ? Math.min(count, current.prefixItems) : 0;
    stack.push([current, count - fromPrefix]);
    if (!current.prefix || fromPrefix === 0) break;
    current = current.prefix;
    count = fromPrefix;
  }
  const out: Item[] = [];
  for (let i = stack.length - 1; i >= 0; i--) {
    const [node2, own] = stack[i]!;
    for (let k = 0; k < own; k++) out.push(node2.own[k]!);
  }
  return out;
}

/** Each store's body builder, kept off its public face. */
const bodies = new WeakMap<ContentStore, (call: ModelCall, kind: BodyKind) => Uint8Array>();

const FIELD: { [kind in BodyKind]: "request_stored" | "upstream_stored" } = { request: "request_stored", upstream: "upstream_stored" };

/**
 * An empty store.
 *
 * @example
 * const store = createContentStore();
 * for await (const { record } of readRecords("data")) {
 *   if (record.kind.case === "modelCall") console.log(requestBodyOf(record.kind.value, store).length);
 * }
 */
export function createContentStore(): ContentStore {
  const rollouts = new Map<string, RolloutPieces>();

  const nodeOf = (call: ModelCall, pieces: RolloutPieces, stored: StoredBody, kind: BodyKind): BodyNode => {
    const field = FIELD[kind];
    const own = decodeItems(call, stored, field);
    let prefix: BodyNode | undefined;
    if (stored.prefixSeq !== 0) {
      prefix = pieces.calls.get(stored.prefixSeq)?.[kind];
      if (!prefix) throw new StoredBodyError(`${where(call, field)}: its prefix is call seq ${stored.prefixSeq} of the rollout, which this reader has not seen (a missing or damaged record, or records not read in log order through one content store)`);
      if (stored.prefixItems > prefix.count) throw new StoredBodyError(`${where(call, field)}: prefix_items ${stored.prefixItems} is past the ${prefix.count} items of call seq ${stored.prefixSeq}`);
    }
    return { prefix, prefixItems: prefix ? stored.prefixItems : 0, own, count: (prefix ? stored.prefixItems : 0) + own.length };
  };

  const store: ContentStore = {
    add(call) {
      let pieces = rollouts.get(call.rolloutId);
      if (pieces?.calls.has(call.seq)) return;
      if (call.content.length === 0 && !call.requestStored && !call.upstreamStored) return;
      if (!pieces) {
        pieces = { calls: new Map() };
        rollouts.set(call.rolloutId, pieces);
      }
      const entry: StoredCall = { content: call.content };
      // The call's own pieces are in place before its bodies are decoded: they may refer to them.
      pieces.calls.set(call.seq, entry);
      try {
        if (call.requestStored) entry.request = nodeOf(call, pieces, call.requestStored, "request");
        if (call.upstreamStored) entry.upstream = nodeOf(call, pieces, call.upstreamStored, "upstream");
      } catch (error) {
        pieces.calls.delete(call.seq);
        throw error;
      }
      pieces.files = undefined;
    },
    forget(rolloutId) {
      rollouts.delete(rolloutId);
    },
    file(rolloutId, sha256) {
      const pieces = rollouts.get(rolloutId);
      if (!pieces) return undefined;
      if (!pieces.files) {
        // Which pieces are files is said by the items that mark them base64.
        pieces.files = new Map();
        for (const call of pieces.calls.values()) {
          for (const node of [call.request, call.upstream]) {
            for (const item of node?.own ?? []) {
              if (!item.base64) continue;
              const data = pieces.calls.get(item.seq)?.content[item.index];
              if (data) pieces.files.set(new Bun.CryptoHasher("sha256").update(data).digest("hex"), data);
            }
          }
        }
      }
      return pieces.files.get(sha256);
    },
  };
  bodies.set(store, bodyOf);

  function bodyOf(call: ModelCall, kind: BodyKind): Uint8Array {
    const stored = kind === "request" ? call.requestStored : call.upstreamStored;
    if (!stored) return kind === "request" ? call.requestBody : call.upstreamRequestBody;
    store.add(call);
    const field = FIELD[kind];
    const pieces = rollouts.get(call.rolloutId)!;
    const node = pieces.calls.get(call.seq)![kind]!;
    const items = take(node, node.count);
    const parts: Uint8Array[] = [];
    let length = 0;
    for (const item of items) {
      let bytes = item.literal;
      if (!bytes) {
        const data = pieces.calls.get(item.seq)?.content[item.index];
        if (!data) throw new StoredBodyError(`${where(call, field)}: piece ${item.index} of call seq ${item.seq} is not held (a missing or damaged record, or records not read in log order through one content store)`);
        bytes = item.base64 ? Buffer.from(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("base64"), "latin1") : data;
      }
      parts.push(bytes);
      length += bytes.length;
    }
    if (length !== stored.length) throw new StoredBodyError(`${where(call, field)}: rebuilt ${length} bytes, the record says ${stored.length}`);
    const body = new Uint8Array(length);
    let at = 0;
    for (const part of parts) {
      body.set(part, at);
      at += part.length;
    }
    return body;
  }
  return store;
}

function rebuild(call: ModelCall, store: ContentStore, kind: BodyKind): Uint8Array {
  const bodyOf = bodies.get(store);
  if (!bodyOf) throw new TypeError("requestBodyOf: the store was not made by createContentStore()");
  return bodyOf(call, kind);
}

/**
 * The body the harness sent, byte for byte (rebuilt from `request_stored` when the record
 * stores it as references; `request_body` otherwise). Adds `call` to `store`.
 *
 * @example
 * const body = JSON.parse(new TextDecoder().decode(requestBodyOf(call, store)));
 */
export function requestBodyOf(call: ModelCall, store: ContentStore): Uint8Array {
  return rebuild(call, store, "request");
}

/**
 * The translated body sent upstream when the record stores one (`upstream_stored` or
 * `upstream_request_body`), else an empty array: see `upstreamRequestOf` for the full rule.
 *
 * @example
 * upstreamRequestBodyOf(anthropicCall, store).length > 0 // true: the Chat Completions body it became
 */
export function upstreamRequestBodyOf(call: ModelCall, store: ContentStore): Uint8Array {
  return rebuild(call, store, "upstream");
}
