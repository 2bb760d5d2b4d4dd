/**
 * Schema-driven typing of tool-call arguments, as vLLM 0.33.0 does it for parsers whose
 * arguments arrive as text (Qwen3-Coder's `<parameter=…>` values): `extract_types_from_schema`
 * and `coerce_to_schema_type` of `vllm/tool_parsers/utils.py`, with Python's `int()` and
 * `float()` reading of strings (surrounding whitespace, signs, `_` between digits, any
 * Unicode decimal digit, `inf`/`nan` for floats).
 */
import { PyFloat, pyInt, tryPyLoads, type PyValue } from "../pyjson.ts";
import { pyStrip } from "../pystr.ts";

/** JSON Schema types a schema allows (`type`, `enum` values, anyOf/oneOf/allOf); ["string"] when none. */
export function extractTypesFromSchema(schema: unknown): string[] {
  if (!isObject(schema)) return ["string"];
  const types = new Set<string>();
  const t = schema.type;
  if (typeof t === "string") types.add(t);
  else if (Array.isArray(t)) for (const x of t) if (typeof x === "string") types.add(x);
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    for (const v of schema.enum) {
      if (v === null) types.add("null");
      else if (typeof v === "boolean") types.add("boolean");
      else if (typeof v === "number") types.add(Number.isInteger(v) ? "integer" : "number");
      else if (typeof v === "string") types.add("string");
      else if (Array.isArray(v)) types.add("array");
      else if (typeof v === "object") types.add("object");
    }
  }
  for (const field of ["anyOf", "oneOf", "allOf"]) {
    const choices = schema[field];
    if (Array.isArray(choices)) for (const c of choices) for (const x of extractTypesFromSchema(c)) types.add(x);
  }
  return types.size > 0 ? [...types] : ["string"];
}

const ALIASES: Record<string, string> = {
  str: "string",
  text: "string",
  varchar: "string",
  char: "string",
  enum: "string",
  int: "integer",
  int32: "integer",
  int64: "integer",
  uint: "integer",
  uint32: "integer",
  uint64: "integer",
  long: "integer",
  short: "integer",
  unsigned: "integer",
  float: "number",
  float32: "number",
  float64: "number",
  double: "number",
  bool: "boolean",
  dict: "object",
  arr: "array",
  list: "array",
  sequence: "array",
};

/**
 * `coerce_to_schema_type(value, types)`: the value as the first type (null, integer, number,
 * boolean, object, array, string) it reads as, else `json.loads(value)` when that gives a
 * finite value, else the string. `changed` is false when the original string came back.
 *
 * @example
 * coerceToSchemaType("42", ["integer"]); // { value: 42, changed: true }
 */
export function coerceToSchemaType(value: string, schemaTypes: string | string[]): { value: PyValue; changed: boolean } {
  const list = typeof schemaTypes === "string" ? [schemaTypes] : schemaTypes;
  const types = new Set(list.map((t) => pyStrip(t).toLowerCase()).map((t) => ALIASES[t] ?? t));
  for (const candidate of ["null", "integer", "number", "boolean", "object", "array", "string"]) {
    if (!types.has(candidate)) continue;
    switch (candidate) {
      case "null":
        if (value.toLowerCase() === "null") return { value: null, changed: true };
        break;
      case "string":
        return { value, changed: false };
      case "integer": {
        const n = pythonInt(value);
        if (n !== undefined) return { value: n, changed: true };
        break;
      }
      case "number": {
        const n = pythonInt(value);
        if (n !== undefined) return { value: n, changed: true };
        const f = pythonFloat(value);
        if (f === undefined || !Number.isFinite(f)) break;
        return { value: Number.isInteger(f) ? wholeFloatAsInt(f) : new PyFloat(f), changed: true };
      }
      case "boolean": {
        const lower = pyStrip(value.toLowerCase());
        if (lower === "true" || lower === "1") return { value: true, changed: true };
        if (lower === "false" || lower === "0") return { value: false, changed: true };
        break;
      }
      default: {
        const parsed = tryPyLoads(value);
        if (parsed !== undefined && isFinitePy(parsed)) return { value: parsed, changed: true };
      }
    }
  }
  const parsed = tryPyLoads(value);
  if (parsed === undefined || !isFinitePy(parsed)) return { value, changed: false };
  return { value: parsed, changed: true };
}

/** `int(f)` of a whole float: exact, a bigint beyond 2^53. */
function wholeFloatAsInt(f: number): number | bigint {
  return Number.isSafeInteger(f) ? (Object.is(f, -0) ? 0 : f) : BigInt(f);
}

/** Whether `json.dumps(value, allow_nan=False)` would succeed. */
export function isFinitePy(value: PyValue): boolean {
  if (value instanceof PyFloat) return Number.isFinite(value.value);
  if (Array.isArray(value)) return value.every(isFinitePy);
  if (value instanceof Map) return [...value.values()].every(isFinitePy);
  return true;
}

/** Unicode decimal digits to ASCII (Python's int() and float() read any of them). */
function asciiDigits(text: string): string {
  return text.replace(/\p{Nd}/gu, (d) => {
    if (d >= "0" && d <= "9") return d;
    // Decimal digits come in runs of ten code points from zero: count back to the run's start.
    let cp = d.codePointAt(0)!;
    let n = 0;
    while (/\p{Nd}/u.test(String.fromCodePoint(cp - 1)) && n < 1_000) {
      cp--;
      n++;
    }
    return String(n % 10);
  });
}

const INT = /^[+-]?[0-9](?:_?[0-9])*$/;
const FLOAT = /^[+-]?(?:(?:[0-9](?:_?[0-9])*)(?:\.(?:[0-9](?:_?[0-9])*)?)?|\.[0-9](?:_?[0-9])*)(?:[eE][+-]?[0-9](?:_?[0-9])*)?$/;
const SPECIAL = /^[+-]?(?:inf|infinity|nan)$/i;

/** Python's `int(text)` (base 10), or undefined where it raises ValueError. */
export function pythonInt(text: string): number | bigint | undefined {
  const s = pyStrip(asciiDigits(text));
  if (!INT.test(s)) return undefined;
  const digits = s.replaceAll("_", "");
  return pyInt(digits.startsWith("+") ? digits.slice(1) : digits);
}

/** Python's `float(text)`, or undefined where it raises ValueError. */
export function pythonFloat(text: string): number | undefined {
  const s = pyStrip(asciiDigits(text));
  if (SPECIAL.test(s)) {
    const negative = s.startsWith("-");
    return /nan/i.test(s) ? NaN : negative ? -Infinity : Infinity;
  }
  if (!FLOAT.test(s)) return undefined;
  return Number(s.replaceAll("_", ""));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
