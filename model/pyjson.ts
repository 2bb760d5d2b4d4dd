/**
 * JSON with Python's semantics, because the model's side of the wire is Python: vLLM parses
 * tool-call argument strings with `json.loads`, the chat template writes them back with
 * `tojson` (`json.dumps(value, ensure_ascii=False)`), and the tool parsers answer with
 * `json.dumps`. JavaScript's JSON loses what Python keeps and the rendered prompt shows:
 * `1.0` stays a float (`1.0`, not `1`), integers are exact at any size, object keys keep
 * their order even when they look like numbers (`{"b": 1, "1": 2}`), `NaN`/`Infinity` parse,
 * and floats print as Python's `repr` (`1e-07`, `1e+16`).
 *
 * Values: `null`, booleans, strings, integers as `number` (safe) or `bigint`, floats as
 * {@link PyFloat}, lists as arrays, dicts as `Map` (insertion order, the last duplicate key
 * wins in the first key's place, as in a Python dict).
 */

/** A Python float (a JS number that must print as Python prints a float). */
export class PyFloat {
  constructor(readonly value: number) {}
}

export type PyValue = null | boolean | string | number | bigint | PyFloat | PyValue[] | PyDict;
export type PyDict = Map<string, PyValue>;

/** Python's `json.loads` raised: the message is Python's. */
export class PyJsonError extends Error {
  constructor(
    message: string,
    readonly pos: number,
  ) {
    super(message);
    this.name = "PyJsonError";
  }
}

const WS = /[ \t\n\r]*/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;
const ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

/**
 * Python's `json.loads(text)` (the standard decoder: strict strings, `NaN`, `Infinity`,
 * `-Infinity` accepted, surrounding whitespace allowed, nothing else after the value).
 *
 * @example
 * pyDumps(pyLoads('{"b":1,"1":2.0}')); // '{"b": 1, "1": 2.0}'
 */
export function pyLoads(text: string): PyValue {
  const reader = new PyJsonReader(text);
  reader.skip();
  const result = reader.value();
  reader.skip();
  if (reader.pos !== text.length) reader.fail("Extra data");
  return result;
}

/** Python's JSON decoder over one text: a recursive descent from `pos`. */
class PyJsonReader {
  pos = 0;

  constructor(private readonly text: string) {}

  fail(message: string, at = this.pos): never {
    throw new PyJsonError(`${message}: line 1 column ${at + 1} (char ${at})`, at);
  }

  skip(): void {
    WS.lastIndex = this.pos;
    WS.exec(this.text);
    this.pos = WS.lastIndex;
  }

  value(): PyValue {
    const text = this.text;
    const pos = this.pos;
    const ch = text[pos];
    if (ch === '"') return this.string();
    if (ch === "{") return this.object();
    if (ch === "[") return this.array();
    if (text.startsWith("null", pos)) return (this.pos += 4), null;
    if (text.startsWith("true", pos)) return (this.pos += 4), true;
    if (text.startsWith("false", pos)) return (this.pos += 5), false;
    if (text.startsWith("NaN", pos)) return (this.pos += 3), new PyFloat(NaN);
    if (text.startsWith("Infinity", pos)) return (this.pos += 8), new PyFloat(Infinity);
    if (text.startsWith("-Infinity", pos)) return (this.pos += 9), new PyFloat(-Infinity);
    NUMBER.lastIndex = pos;
    const m = NUMBER.exec(text);
    if (!m) return this.fail("Expecting value");
    this.pos = NUMBER.lastIndex;
    if (m[1] === undefined && m[2] === undefined) return pyInt(m[0]);
    return new PyFloat(Number(m[0]));
  }

  string(): string {
    const text = this.text;
    let pos = this.pos;
    const start = pos++;
    let out = "";
    let run = pos;
    for (;;) {
      if (pos >= text.length) this.fail("Unterminated string starting at", start);
      const c = text.charCodeAt(pos);
      if (c === 0x22) {
        out += text.slice(run, pos++);
        this.pos = pos;
        return out;
      }
      if (c < 0x20) this.fail("Invalid control character at", pos);
      if (c !== 0x5c) {
        pos++;
        continue;
      }
      out += text.slice(run, pos);
      const e = text[pos + 1];
      if (e === undefined) this.fail("Unterminated string starting at", start);
      if (e === "u") {
        const hex = text.slice(pos + 2, pos + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail("Invalid \\uXXXX escape", pos + 1);
        out += String.fromCharCode(parseInt(hex, 16));
        pos += 6;
      } else if (e! in ESCAPES) {
        out += ESCAPES[e!];
        pos += 2;
      } else {
        this.fail("Invalid \\escape", pos);
      }
      run = pos;
    }
  }

  object(): PyDict {
    const text = this.text;
    const map: PyDict = new Map();
    this.pos++;
    this.skip();
    if (text[this.pos] === "}") return this.pos++, map;
    for (;;) {
      if (text[this.pos] !== '"') this.fail("Expecting property name enclosed in double quotes");
      const key = this.string();
      this.skip();
      if (text[this.pos] !== ":") this.fail("Expecting ':' delimiter");
      this.pos++;
      this.skip();
      map.set(key, this.value());
      this.skip();
      if (text[this.pos] === "}") return this.pos++, map;
      if (text[this.pos] !== ",") this.fail("Expecting ',' delimiter");
      this.pos++;
      this.skip();
    }
  }

  array(): PyValue[] {
    const text = this.text;
    const list: PyValue[] = [];
    this.pos++;
    this.skip();
    if (text[this.pos] === "]") return this.pos++, list;
    for (;;) {
      list.push(this.value());
      this.skip();
      if (text[this.pos] === "]") return this.pos++, list;
      if (text[this.pos] !== ",") this.fail("Expecting ',' delimiter");
      this.pos++;
      this.skip();
    }
  }
}

/** Python's `json.loads`, or `undefined` where it raises. */
export function tryPyLoads(text: string): PyValue | undefined {
  try {
    return pyLoads(text);
  } catch (error) {
    if (error instanceof PyJsonError) return undefined;
    throw error;
  }
}

/** A Python int from its decimal digits: a number when exact, else a bigint. */
export function pyInt(digits: string): number | bigint {
  const n = Number(digits);
  return Number.isSafeInteger(n) ? (Object.is(n, -0) ? 0 : n) : BigInt(digits);
}

/**
 * `json.dumps(value, ensure_ascii=False)` with Python's default separators (", " and ": "),
 * as the chat template's `tojson` and vLLM's parsers write JSON.
 *
 * @example
 * pyDumps(new Map([["path", "é"], ["n", new PyFloat(1)]])); // '{"path": "é", "n": 1.0}'
 */
export function pyDumps(value: PyValue): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "string":
      return pyString(value);
    case "number":
      return String(value);
    case "bigint":
      return value.toString();
  }
  if (value instanceof PyFloat) return pyFloatJson(value.value);
  if (Array.isArray(value)) return `[${value.map(pyDumps).join(", ")}]`;
  const parts: string[] = [];
  for (const [k, v] of value) parts.push(`${pyString(k)}: ${pyDumps(v)}`);
  return `{${parts.join(", ")}}`;
}

/**
 * A string as `json.dumps(s, ensure_ascii=False)` writes it: JSON.stringify's escapes are
 * Python's (`\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, other controls as lowercase `\u00XX`),
 * except that Python writes a lone surrogate as it is.
 */
export function pyString(text: string): string {
  const json = JSON.stringify(text);
  return json.includes("\\ud") ? json.replace(/\\u(d[89a-f][0-9a-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) : json;
}

/** A float as `json.dumps` writes it: `repr`, or `NaN` / `Infinity` / `-Infinity`. */
export function pyFloatJson(x: number): string {
  if (Number.isNaN(x)) return "NaN";
  if (x === Infinity) return "Infinity";
  if (x === -Infinity) return "-Infinity";
  return pyFloatRepr(x);
}

/**
 * Python's `repr(float)`: the shortest digits that round-trip (the same digits JavaScript
 * finds), written in fixed notation when the decimal exponent is in [-4, 16), else as
 * `d.ddde±XX`; a whole number keeps its `.0`.
 *
 * @example
 * [pyFloatRepr(1), pyFloatRepr(1e16), pyFloatRepr(1e-7), pyFloatRepr(0.0001)]; // ["1.0", "1e+16", "1e-07", "0.0001"]
 */
export function pyFloatRepr(x: number): string {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "nan" : x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  const [mantissa, exp] = Math.abs(x).toExponential().split("e") as [string, string];
  const digits = mantissa.replace(".", "");
  const e = Number(exp);
  // decpt: where the decimal point falls relative to the digits (0.d1d2… × 10^decpt).
  const decpt = e + 1;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) return `${sign}0.${"0".repeat(-decpt)}${digits}`;
    if (decpt >= digits.length) return `${sign}${digits}${"0".repeat(decpt - digits.length)}.0`;
    return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
  }
  const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${m}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
}

/**
 * A value parsed by JavaScript (a request body) as the Python value `json.loads` would have
 * made of the same text, as far as JavaScript kept it: whole numbers are ints, others floats;
 * object keys in JavaScript's order (keys that look like array indices come first there).
 *
 * @example
 * pyDumps(fromJs({ a: 1, b: 0.5, c: [true, null] })); // '{"a": 1, "b": 0.5, "c": [true, null]}'
 */
export function fromJs(value: unknown): PyValue {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case "boolean":
    case "string":
    case "bigint":
      return value;
    case "number":
      return Number.isInteger(value) && Math.abs(value) < 1e21 ? (Number.isSafeInteger(value) ? value : BigInt(value)) : new PyFloat(value);
  }
  if (value instanceof PyFloat || value instanceof Map) return value as PyValue;
  if (Array.isArray(value)) return value.map(fromJs);
  const map: PyDict = new Map();
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) if (v !== undefined) map.set(k, fromJs(v));
  return map;
}

/**
 * A Python value as plain JavaScript (dicts as objects, floats and big ints as numbers), for
 * code that only reads it.
 *
 * @example
 * toJs(pyLoads('{"a": [1.0]}')); // { a: [1] }
 */
export function toJs(value: PyValue): unknown {
  if (value instanceof PyFloat) return value.value;
  if (typeof value === "bigint") return Number(value);
  if (Array.isArray(value)) return value.map(toJs);
  if (value instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of value) out[k] = toJs(v);
    return out;
  }
  return value;
}

/** Python's type name of a value (for messages that quote Python's). */
export function pyTypeName(value: PyValue): string {
  if (value === null) return "NoneType";
  if (typeof value === "boolean") return "bool";
  if (typeof value === "string") return "str";
  if (typeof value === "number" || typeof value === "bigint") return "int";
  if (value instanceof PyFloat) return "float";
  return Array.isArray(value) ? "list" : "dict";
}
