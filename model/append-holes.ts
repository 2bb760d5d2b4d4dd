/**
 * The text a chat template writes after a turn, kept per template state with holes for the
 * tool results (docs/performance.md, issue 32): token-in mode renders what a call appends
 * (model/append.ts) on every call of a tool loop, and what it appends is almost always the same
 * shape — the turn's closer, the tool results of the calls the model made, the generation
 * prompt — around text the harness sent (each result's content and call id). So the window
 * (append.ts, `windowOf`) is rendered once per shape with a unique marker in place of each of
 * those strings, and each later call with the same shape fills its own strings into that text
 * instead of running the Jinja interpreter again.
 *
 * A shape is the template, its variables, the messages of the window before the turn (the first
 * message, the user and system messages: the same dicts call after call, model/preprocess.ts's
 * cache), and the messages after it: a tool message whose fields besides its role are strings is
 * a hole per field; any other message is itself (its identity: a new user message renders
 * afresh). A template may not write such a string verbatim (escape it, trim it, branch on it):
 * whether it does is probed once per template (`holesExact`, on the probe conversations and on
 * tool results made to catch escaping and trimming, model/suffix-probe.ts), and a template that
 * writes any of them otherwise is always rendered.
 */
import { ownCopy } from "../lib/index.ts";
import type { PyDict, PyValue } from "./pyjson.ts";
import type { Preprocessed } from "./preprocess.ts";

const nonce = crypto.randomUUID();
const HOLE = new RegExp(`forge-hole-${nonce}-(\\d+)-(\\w+)-end`, "g");
const hole = (message: number, field: string) => `forge-hole-${nonce}-${message}-${field}-end`;

/** The text after the closer, cut at its holes: `parts[0]`, hole 0, `parts[1]`, …, `parts[n]`. */
interface Holed {
  parts: string[];
  /** Each hole: the message (counted from the turn's next) and its field. */
  refs: [number, string][];
}

/**
 * Holed texts of one template (its variables are in the key), bounded by entries (each is the short text a template writes
 * around tool results, without them; the oldest go first).
 */
export class HoleCache {
  /** false: the template did not write the shape's markers as given (it is rendered each time). */
  private readonly texts = new Map<string, Holed | false>();
  constructor(readonly maxEntries = 1024) {}

  get(key: string): Holed | false | undefined {
    return this.texts.get(key);
  }

  /** Whether a shape's template did not write its markers as given (the probe's question). */
  refused(): boolean {
    for (const holed of this.texts.values()) if (holed === false) return true;
    return false;
  }

  set(key: string, holed: Holed | false): void {
    if (this.texts.size >= this.maxEntries) this.texts.delete(this.texts.keys().next().value!);
    this.texts.set(key, holed);
  }
}

/** Objects (dicts, lists) by identity: preprocessed messages sent again are the same dicts, never changed. */
const objectIds = new WeakMap<object, number>();
let nextObjectId = 1;
function idOf(value: object): number {
  let id = objectIds.get(value);
  if (id === undefined) objectIds.set(value, (id = nextObjectId++));
  return id;
}

/** A tool message whose fields besides `role` are all strings: each is a hole. */
function holeable(message: PyDict): boolean {
  if (message.get("role") !== "tool") return false;
  for (const [k, v] of message) if (k !== "role" && typeof v !== "string") return false;
  return true;
}

function valueKey(value: PyValue): string {
  if (value === null || typeof value !== "object") return `${typeof value}:${String(value)}`;
  return `#${idOf(value)}`;
}

/**
 * The shape's key, or undefined when no message after the turn is a hole (nothing to gain).
 * `prefix` is the window's messages before the turn, `after` the messages after it.
 */
function shapeKey(variables: Map<string, PyValue>, prefix: readonly PyDict[], after: readonly PyDict[]): string | undefined {
  let key = "";
  for (const [k, v] of variables) key += `\u0001${k}=${valueKey(v)}`;
  key += "\u0002";
  for (const m of prefix) key += `,${idOf(m)}`;
  key += "\u0002";
  let holes = 0;
  for (const m of after) {
    if (!holeable(m)) {
      key += `,${idOf(m)}`;
      continue;
    }
    holes++;
    key += ",t";
    for (const k of m.keys()) key += `:${k}`;
  }
  return holes > 0 ? key : undefined;
}

/** `after` with each hole's string replaced by its marker. */
function withMarkers(after: readonly PyDict[]): PyDict[] {
  return after.map((m, i) => {
    if (!holeable(m)) return m;
    const marked: PyDict = new Map();
    for (const [k, v] of m) marked.set(k, k === "role" ? v : hole(i, k));
    return marked;
  });
}

/** The holed text cut at its markers, or undefined when the template wrote part of a marker (it did not write the string as given). */
function cut(text: string): Holed | undefined {
  const parts: string[] = [];
  const refs: [number, string][] = [];
  let at = 0;
  for (const m of text.matchAll(HOLE)) {
    parts.push(text.slice(at, m.index));
    refs.push([Number(m[1]), m[2]!]);
    at = m.index + m[0].length;
  }
  parts.push(text.slice(at));
  if (parts.some((p) => p.includes(nonce) || p.includes("forge-hole-"))) return undefined;
  // Own copies: a slice would hold the whole rendered window (a system prompt of 100 KB) alive.
  return { parts: parts.map(ownCopy), refs };
}

function fill(holed: Holed, after: readonly PyDict[]): string {
  let text = holed.parts[0]!;
  for (let i = 0; i < holed.refs.length; i++) {
    const [message, field] = holed.refs[i]!;
    text += (after[message]!.get(field) as string) + holed.parts[i + 1]!;
  }
  return text;
}

/**
 * What the template writes after the turn followed by `after`, from the shape's holed text
 * (rendered with `renderAfter` at the shape's first call), or undefined when there is no shape to
 * keep (no tool message after the turn) or the template did not write the markers as given.
 *
 * @example
 * holedTextAfter(cache, prepared, prefix, after, (marked) => textAfterStandIn([...prefix, standIn, ...marked])) // "\n<|im_start|>user\n<tool_response>\n…"
 */
export function holedTextAfter<P extends Preprocessed>(cache: HoleCache, prepared: P, prefix: readonly PyDict[], after: readonly PyDict[], renderAfter: (after: PyDict[]) => string): string | undefined {
  const key = shapeKey(prepared.variables, prefix, after);
  if (key === undefined) return undefined;
  let holed = cache.get(key);
  if (holed === undefined) {
    try {
      holed = cut(renderAfter(withMarkers(after))) ?? false;
    } catch {
      // The markers made the template fail where the strings may not: each call renders its own.
      holed = false;
    }
    cache.set(key, holed);
  }
  return holed ? fill(holed, after) : undefined;
}
