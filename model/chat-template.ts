/**
 * A model's own chat template (the Jinja source in its tokenizer_config.json) run by
 * `@huggingface/jinja`, with the variables transformers' `apply_chat_template` gives it.
 *
 * Values enter the template as Python values ({@link PyValue}), so that `tojson` writes what
 * Python's `json.dumps` writes: the library builds its runtime values from plain JavaScript
 * (dict keys in JavaScript's order, every whole number an int) and serializes numbers with
 * `JSON.stringify`, so this module builds the runtime values itself, from the library's own
 * classes, and gives a float or big int whose JavaScript text differs from Python's a boxed
 * number that serializes as Python's text (`JSON.rawJSON`).
 */
import { Environment, Interpreter, Template } from "@huggingface/jinja";
import { pyFloatJson, pyFloatRepr, PyFloat, type PyValue } from "./pyjson.ts";

/** The runtime value classes of the library, taken from values it builds. */
const probe = new Environment();
type RuntimeCtor = new (value: unknown) => unknown;
let probed = 0;
const ctor = (value: unknown) => (probe.set(`v${probed++}`, value) as object).constructor as RuntimeCtor;
const UndefinedValue = ctor(undefined);
const IntegerValue = ctor(1);
const FloatValue = ctor(1.5);
const StringValue = ctor("");
const BooleanValue = ctor(true);
const NullValue = ctor(null);
const ArrayValue = ctor([]);
const ObjectValue = ctor({});

const rawJSON = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;
/** Marks Python's `NaN` / `Infinity` in tojson output (JSON.rawJSON accepts only JSON). */
const NONJSON = `\uE000forge${crypto.randomUUID().slice(0, 8)}\uE001`;
const NONJSON_QUOTED = new RegExp(`"${NONJSON}(NaN|-?Infinity)${NONJSON}"`, "g");

/** A number the library keeps as-is for arithmetic but that JSON.stringify writes as `text`. */
function boxed(value: number | bigint, text: string): unknown {
  const box = Object(value) as { toJSON?: () => unknown };
  box.toJSON = Number.isFinite(value) || typeof value === "bigint" ? () => rawJSON(text) : () => `${NONJSON}${text}${NONJSON}`;
  return box;
}

/** A Python value as the library's runtime value. */
export function toRuntime(value: PyValue | undefined): unknown {
  if (value === undefined) return new UndefinedValue(undefined);
  if (value === null) return new NullValue(null);
  switch (typeof value) {
    case "boolean":
      return new BooleanValue(value);
    case "string":
      return new StringValue(value);
    case "number":
      return new IntegerValue(value);
    case "bigint":
      return new IntegerValue(boxed(value, value.toString()));
  }
  if (value instanceof PyFloat) {
    const text = pyFloatJson(value.value);
    return new FloatValue(text === JSON.stringify(value.value) ? value.value : boxed(value.value, text));
  }
  if (Array.isArray(value)) return new ArrayValue(value.map(toRuntime));
  return new ObjectValue(new Map([...value].map(([k, v]) => [k, toRuntime(v)])));
}

/** The chat template raised (`raise_exception`) or could not run. */
export class ChatTemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ChatTemplateError";
  }
}

export interface ChatTemplate {
  /** The Jinja source. */
  source: string;
  /** Renders with these top-level variables (undefined ones are left undefined). */
  render(variables: Record<string, PyValue | undefined>): string;
}

/**
 * Compiles a chat template once; each render gets a fresh environment with the globals
 * transformers gives chat templates (`raise_exception`, `strftime_now`, Jinja's `range`).
 *
 * @example
 * const t = compileChatTemplate("{{ messages[0].content | tojson }}");
 * t.render({ messages: [new Map([["content", new Map([["n", new PyFloat(1)]])]])] }); // '{"n": 1.0}'
 */
export function compileChatTemplate(source: string): ChatTemplate {
  let program: Template;
  try {
    program = new Template(source);
  } catch (error) {
    throw new ChatTemplateError(`the chat template does not parse: ${(error as Error).message}`);
  }
  return {
    source,
    render(variables) {
      const env = new Environment();
      for (const [name, value] of [
        ["true", true],
        ["false", false],
        ["none", null],
        ["True", true],
        ["False", false],
        ["None", null],
      ] as const)
        env.set(name, value);
      env.set("raise_exception", (message: unknown) => {
        throw new ChatTemplateError(String(message));
      });
      env.set("range", pyRange);
      env.set("strftime_now", (format: string) => strftimeNow(format));
      for (const [name, value] of Object.entries(variables)) {
        if (value !== undefined) env.setVariable(name, toRuntime(value) as never);
      }
      try {
        const out = new PyInterpreter(env).run(program.parsed).value as string;
        return out.includes(NONJSON) ? out.replace(NONJSON_QUOTED, "$1") : out;
      } catch (error) {
        if (error instanceof ChatTemplateError) throw error;
        throw new ChatTemplateError(`the chat template failed: ${(error as Error).message}`);
      }
    },
  };
}

/**
 * The library's interpreter with Python's `str()` for the `string` filter where the library
 * writes something else: `True`/`False`/`None` (it writes `true`/`false` and refuses None) and a
 * float's repr (`1e-07`, not `1e-7`); and Jinja's `trim` of a value that is not a string, which
 * is `str(value).strip()` (the library refuses it): vLLM gives a tool without a description
 * `description: None`, which Qwen3-Coder's template writes as `None | trim`. Qwen3-Coder's
 * template writes non-string tool-call arguments and schema fields with `| string`.
 */
class PyInterpreter extends Interpreter {}
// applyFilter is private in the library's types, so it is replaced on the prototype.
const libraryApplyFilter = (Interpreter.prototype as any).applyFilter as (operand: unknown, filterNode: unknown, environment: Environment) => unknown;
(PyInterpreter.prototype as any).applyFilter = function (this: Interpreter, operand: any, filterNode: any, environment: Environment): unknown {
  if (filterNode?.type === "Identifier" && (filterNode.value === "string" || filterNode.value === "trim")) {
    const text = pyScalarStr(operand);
    if (text !== undefined) return new StringValue(filterNode.value === "trim" ? text.trim() : text);
  }
  return libraryApplyFilter.call(this, operand, filterNode, environment);
};

/** Python's `str()` of a scalar runtime value the library writes otherwise (undefined for the rest). */
function pyScalarStr(operand: unknown): string | undefined {
  const value = (operand as { value?: unknown } | undefined)?.value;
  if (operand instanceof BooleanValue) return value ? "True" : "False";
  if (operand instanceof NullValue) return "None";
  if (operand instanceof FloatValue) return pyFloatRepr(Number(value));
  if (operand instanceof IntegerValue) return String(value);
  return undefined;
}

function pyRange(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) [start, stop] = [0, start];
  if (step === 0) throw new ChatTemplateError("range() arg 3 must not be zero");
  const out: number[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) out.push(i);
  return out;
}

/** transformers' `strftime_now`: Python's `datetime.now().strftime(format)` (the common codes). */
function strftimeNow(format: string): string {
  const d = new Date();
  const pad = (n: number) => String(n).padStart(2, "0");
  const month = (style: "long" | "short") => new Intl.DateTimeFormat("en-US", { month: style }).format(d);
  const day = (style: "long" | "short") => new Intl.DateTimeFormat("en-US", { weekday: style }).format(d);
  return format.replace(/%[YmdbBHMSaAjy%]/g, (code) => {
    switch (code) {
      case "%Y":
        return String(d.getFullYear());
      case "%y":
        return pad(d.getFullYear() % 100);
      case "%m":
        return pad(d.getMonth() + 1);
      case "%d":
        return pad(d.getDate());
      case "%b":
        return month("short");
      case "%B":
        return month("long");
      case "%a":
        return day("short");
      case "%A":
        return day("long");
      case "%H":
        return pad(d.getHours());
      case "%M":
        return pad(d.getMinutes());
      case "%S":
        return pad(d.getSeconds());
      case "%j":
        return String(Math.floor((d.getTime() - new Date(d.getFullYear(), 0, 0).getTime()) / 86_400_000)).padStart(3, "0");
      default:
        return "%";
    }
  });
}
