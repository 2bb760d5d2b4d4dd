/**
 * The writer side of stored bodies (docs/record-format.md, "Stored bodies"): turns a call's
 * request (and translated upstream) body into references to content its rollout already
 * stored in this segment, plus what is new.
 *
 * A body is cut at its message boundaries (`bodySpans`) into items: literal runs (keys,
 * commas, small values) and pieces (a message, the tools, the system prompt, a base64 file
 * stored decoded). A piece is identified by two 64-bit xxHash3 of its bytes with per-process
 * seeds and its length (a base64 file by its sha256), so a message sent again is a reference,
 * never stored twice. The items a body shares with the start of a recent call's body are one
 * prefix reference, so a call costs what it adds, not the length of the conversation.
 *
 * State is per rollout and per segment: when the log starts a new segment, everything is
 * forgotten and pieces are stored again, so every segment reads on its own (analytics compacts
 * segments one by one). It is committed only once the call's record is appended: a failed
 * append leaves no reference to pieces that are not in the log.
 */
import { randomBytes } from "node:crypto";
import { messageFactory, StoredBodySchema, type StoredBody } from "../schemas/index.ts";
import { base64File } from "./base64-files.ts";
import { scannedBodySpans, type CutSpan, type PieceSpan, type Span } from "./body-spans.ts";

export type ContentWriterOptions = {
  /** Bodies shorter than this are stored as they are. Default 1024. */
  minBody?: number;
  /** Runs shorter than this are literal, not pieces. Default 32. */
  minPiece?: number;
  /** Literal runs this long or longer become pieces. Default 256. */
  maxLiteral?: number;
  /** Strings at least this long are pieces of their own (shared by a body and its translation). Default 256. */
  minString?: number;
  /**
   * Text runs of a top-level value (not a message) longer than twice this are cut into pieces
   * of at least this many bytes, each ending after a space or a comma: a value that grows by
   * appending (a completions prompt, a token-id prompt) then repeats its earlier pieces, and
   * only its last piece is new. Default 1024.
   */
  chunkBytes?: number;
  /** Calls per rollout and body kind whose items are kept to find a common prefix. Default 4. */
  recentCalls?: number;
  /** Pieces remembered over all rollouts; least recently used rollouts are forgotten past it. Default 262144. */
  maxPieces?: number;
};

export type BodyKind = "request" | "upstream";

/**
 * The defaults of what a body's scan depends on: the bodies stored in pieces and how they are
 * cut. A caller that scans a body before it is stored (the Chat door) scans with these, so the
 * writer takes its spans (`scannedBodySpans`).
 */
export const STORED_BODY_SCAN = { minBody: 1024, minPiece: 32, minString: 256 } as const;

export interface CallContent {
  /** The stored form of `body`, or undefined to store the body as it is (too small). */
  store(body: Uint8Array, kind: BodyKind): StoredBody | undefined;
  /** The pieces this call stores first (ModelCall.content). */
  readonly content: Uint8Array[];
  /** sha256 (hex) of the base64 files of the request body, distinct, in order (ModelCall.blob_refs). */
  readonly files: string[];
  /** Lets later calls refer to this call's pieces and items: call it once its record is appended. */
  commit(): void;
}

export interface ContentWriter {
  /** Starts call `seq` of `rolloutId`, whose record goes to segment `segment`. */
  begin(rolloutId: string, seq: number, segment: string): CallContent;
  /** Forgets a rollout (finished: its later calls, if any, store their content again). */
  forget(rolloutId: string): void;
  stats(): { rollouts: number; pieces: number; segment: string };
}

/** A literal run (its bytes) or a piece (seq, index, base64). */
type Item = { literal: Uint8Array | undefined; seq: number; index: number; base64: boolean };
type PieceRef = { seq: number; index: number };
type TextEntry = PieceRef & { length: number; check: bigint };
type Recent = { seq: number; items: Item[] };
type RolloutContent = {
  text: Map<bigint, TextEntry>;
  files: Map<string, PieceRef>;
  recent: { [kind in BodyKind]: Recent[] };
  pieces: number;
};

const SPACE = 0x20;
const COMMA = 0x2c;
/** create(StoredBodySchema, …) without its reflective walk per body (schemas/message-factory.ts). */
const newStoredBody = messageFactory(StoredBodySchema);
const keySeed = randomBytes(8).readBigUInt64LE();
const checkSeed = randomBytes(8).readBigUInt64LE();

function newRollout(): RolloutContent {
  return { text: new Map(), files: new Map(), recent: { request: [], upstream: [] }, pieces: 0 };
}

function sameItem(a: Item, b: Item): boolean {
  if (a.literal !== undefined || b.literal !== undefined) {
    if (a.literal === undefined || b.literal === undefined || a.literal.length !== b.literal.length) return false;
    for (let k = 0; k < a.literal.length; k++) if (a.literal[k] !== b.literal[k]) return false;
    return true;
  }
  return a.seq === b.seq && a.index === b.index && a.base64 === b.base64;
}

/**
 * A writer with no state yet.
 *
 * @example
 * const writer = createContentWriter();
 * const call = writer.begin("ro-1", 1, log.stats().segment);
 * const requestStored = call.store(requestBody, "request");
 * log.append(recordWith({ content: call.content, requestStored, blobRefs: call.files }));
 * call.commit();
 */
export function createContentWriter(options: ContentWriterOptions = {}): ContentWriter {
  return new SegmentContentWriter({
    minBody: options.minBody ?? STORED_BODY_SCAN.minBody,
    minPiece: options.minPiece ?? STORED_BODY_SCAN.minPiece,
    maxLiteral: options.maxLiteral ?? 256,
    chunkBytes: options.chunkBytes ?? 1024,
    minString: options.minString ?? STORED_BODY_SCAN.minString,
    recentCalls: options.recentCalls ?? 4,
    maxPieces: options.maxPieces ?? 262_144,
  });
}

type Settings = { [K in keyof ContentWriterOptions]-?: number };

/** What every rollout stored in the current segment, least recently used first. */
class SegmentContentWriter implements ContentWriter {
  // Insertion order = least recently used first.
  private readonly rollouts = new Map<string, RolloutContent>();
  private segment = "";
  /** Pieces remembered over all rollouts. */
  pieces = 0;

  constructor(readonly settings: Settings) {}

  begin(rolloutId: string, seq: number, callSegment: string): CallContent {
    if (callSegment !== this.segment) {
      this.rollouts.clear();
      this.pieces = 0;
      this.segment = callSegment;
    }
    return new CallContentWriter(this, rolloutId, this.stateOf(rolloutId), seq);
  }

  forget(rolloutId: string): void {
    const state = this.rollouts.get(rolloutId);
    if (!state) return;
    this.rollouts.delete(rolloutId);
    this.pieces -= state.pieces;
  }

  stats(): { rollouts: number; pieces: number; segment: string } {
    return { rollouts: this.rollouts.size, pieces: this.pieces, segment: this.segment };
  }

  /** Forgets the least recently used rollouts (but `keep`) while over `maxPieces`. */
  trim(keep: string): void {
    for (const [id, state] of this.rollouts) {
      if (this.pieces <= this.settings.maxPieces || id === keep) break;
      this.rollouts.delete(id);
      this.pieces -= state.pieces;
    }
  }

  private stateOf(rolloutId: string): RolloutContent {
    let state = this.rollouts.get(rolloutId);
    if (state) this.rollouts.delete(rolloutId);
    else state = newRollout();
    this.rollouts.set(rolloutId, state);
    return state;
  }
}

/** One call's content: the pieces it stores first, and what it adds to its rollout's state once committed. */
class CallContentWriter implements CallContent {
  readonly content: Uint8Array[] = [];
  readonly files: string[] = [];
  private readonly newText = new Map<bigint, TextEntry>();
  private readonly newFiles = new Map<string, PieceRef>();
  private readonly built: { [kind in BodyKind]?: Item[] } = {};
  private committed = false;

  constructor(
    private readonly writer: SegmentContentWriter,
    private readonly rolloutId: string,
    private readonly state: RolloutContent,
    private readonly seq: number,
  ) {}

  store(body: Uint8Array, kind: BodyKind): StoredBody | undefined {
    if (body.length < this.writer.settings.minBody) return undefined;
    const items = this.itemsOf(body, kind);
    this.built[kind] = items;
    const { prefixSeq, prefixItems } = longestRecentPrefix(items, this.state.recent[kind]);
    const { literal, numbers } = encodeItems(items.slice(prefixItems));
    return newStoredBody({ prefixSeq, prefixItems, literal, items: numbers, length: body.length });
  }

  commit(): void {
    if (this.committed) return;
    this.committed = true;
    const state = this.state;
    for (const [key, entry] of this.newText) state.text.set(key, entry);
    for (const [sha256, ref] of this.newFiles) state.files.set(sha256, ref);
    state.pieces += this.content.length;
    this.writer.pieces += this.content.length;
    for (const kind of ["request", "upstream"] as const) {
      const items = this.built[kind];
      if (!items) continue;
      const recent = state.recent[kind];
      recent.push({ seq: this.seq, items });
      if (recent.length > this.writer.settings.recentCalls) recent.shift();
    }
    this.writer.trim(this.rolloutId);
  }

  private textRef(bytes: Uint8Array): PieceRef {
    const key = Bun.hash.xxHash3(bytes, keySeed);
    const check = Bun.hash.xxHash3(bytes, checkSeed);
    const known = this.state.text.get(key) ?? this.newText.get(key);
    if (known && known.length === bytes.length && known.check === check) return known;
    const entry: TextEntry = { seq: this.seq, index: this.content.length, length: bytes.length, check };
    this.content.push(bytes);
    // A colliding key of another length or check keeps the first entry: this piece is stored, not referenced.
    if (!known) this.newText.set(key, entry);
    return entry;
  }

  private fileRef(text: Uint8Array, kind: BodyKind): PieceRef | undefined {
    const file = base64File(text);
    if (!file) return undefined;
    if (kind === "request" && !this.files.includes(file.sha256)) this.files.push(file.sha256);
    const known = this.state.files.get(file.sha256) ?? this.newFiles.get(file.sha256);
    if (known) return known;
    const ref = { seq: this.seq, index: this.content.length };
    this.content.push(file.data);
    this.newFiles.set(file.sha256, ref);
    return ref;
  }

  /** The body as items: literal runs and pieces, cut at its message boundaries. */
  private itemsOf(body: Uint8Array, kind: BodyKind): Item[] {
    const { minPiece, minString, maxLiteral, chunkBytes } = this.writer.settings;
    const spans = scannedBodySpans(body, { minPiece, minString }) ?? { pieces: [{ start: 0, end: body.length, element: false }] as PieceSpan[], cuts: [] as CutSpan[] };
    const items: Item[] = [];
    // Literal runs are kept as ranges of `body` until the end, then copied (they are small).
    const ranges = new Map<Item, Span>();
    const literal = (start: number, end: number): void => {
      if (end <= start) return;
      if (end - start >= maxLiteral) return text(start, end);
      const last = items[items.length - 1];
      const range = last && ranges.get(last);
      if (range && range.end === start && end - range.start < maxLiteral) {
        range.end = end;
        return;
      }
      const item: Item = { literal: undefined, seq: 0, index: 0, base64: false };
      items.push(item);
      ranges.set(item, { start, end });
    };
    const piece = (start: number, end: number) => {
      const ref = this.textRef(body.subarray(start, end));
      items.push({ literal: undefined, seq: ref.seq, index: ref.index, base64: false });
    };
    const text = (start: number, end: number, chunked = false): void => {
      if (end - start < minPiece) return literal(start, end);
      // Cut points depend only on the bytes since the run's start, so a run that grew by
      // appending is cut where it was before.
      while (chunked && end - start > 2 * chunkBytes) {
        const from = start + chunkBytes;
        const space = body.indexOf(SPACE, from);
        const comma = body.indexOf(COMMA, from);
        const cut = Math.min(space < 0 ? Infinity : space, comma < 0 ? Infinity : comma) + 1;
        if (cut >= end) break;
        piece(start, cut);
        start = cut;
      }
      piece(start, end);
    };
    let cursor = 0;
    let next = 0; // the next cut
    for (const span of spans.pieces) {
      literal(cursor, span.start);
      const chunked = !span.element;
      let at = span.start;
      while (next < spans.cuts.length && spans.cuts[next]!.start < span.end) {
        const cut = spans.cuts[next++]!;
        if (cut.start < at) continue;
        text(at, cut.start, chunked);
        const ref = cut.base64 ? this.fileRef(body.subarray(cut.start, cut.end), kind) : undefined;
        if (ref) items.push({ literal: undefined, seq: ref.seq, index: ref.index, base64: true });
        else text(cut.start, cut.end, chunked);
        at = cut.end;
      }
      text(at, span.end, chunked);
      cursor = span.end;
    }
    literal(cursor, body.length);
    for (const [item, range] of ranges) item.literal = body.slice(range.start, range.end);
    return items;
  }
}

/** The recent call sharing the most leading items with `items` (the latest wins a tie). */
function longestRecentPrefix(items: Item[], recent: Recent[]): { prefixSeq: number; prefixItems: number } {
  let prefixSeq = 0;
  let prefixItems = 0;
  for (let r = recent.length - 1; r >= 0; r--) {
    const past = recent[r]!;
    const n = Math.min(items.length, past.items.length);
    let k = 0;
    while (k < n && sameItem(items[k]!, past.items[k]!)) k++;
    if (k > prefixItems) {
      prefixItems = k;
      prefixSeq = past.seq;
    }
  }
  return { prefixSeq, prefixItems };
}

/** A StoredBody's literal bytes and item numbers for the items after the prefix (docs/record-format.md). */
function encodeItems(own: Item[]): { literal: Uint8Array; numbers: number[] } {
  let literalLength = 0;
  for (const item of own) if (item.literal) literalLength += item.literal.length;
  const literal = new Uint8Array(literalLength);
  const numbers: number[] = [];
  let at = 0;
  for (const item of own) {
    if (item.literal) {
      literal.set(item.literal, at);
      at += item.literal.length;
      numbers.push(item.literal.length * 2);
    } else {
      numbers.push(item.index * 4 + (item.base64 ? 2 : 0) + 1, item.seq);
    }
  }
  return { literal, numbers };
}
