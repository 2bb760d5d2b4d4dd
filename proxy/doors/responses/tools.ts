/**
 * Responses API tools → Chat Completions tools, and back for the model's calls.
 *
 * Responses tools come in the top-level `tools` and, from Codex on its built-in provider,
 * inside `additional_tools` input items. Function tools map one to one; `namespace` tools
 * are flattened to `<namespace>__<child>` (a Chat function name cannot nest) and `custom`
 * (freeform) tools become a function taking `{input: string}`. The catalogue remembers
 * each Chat name's origin so a call is answered as the item type the harness declared.
 */
import { TranslationError, type ChatTool } from "../chat-types.ts";

// Responses tools are JSON of many shapes; fields are checked as they are read.
type Json = any;

export interface ToolOrigin {
  kind: "function" | "custom";
  /** The name the harness declared (the child name for a namespace tool). */
  name: string;
  namespace?: string;
}

export interface ToolCatalogue {
  tools: ChatTool[];
  /** Chat function name → where it came from. */
  origins: Map<string, ToolOrigin>;
  /** Tool types that cannot be served by a Chat model and were left out (web_search, ...). */
  dropped: string[];
}

/**
 * The Chat name of a namespaced tool.
 *
 * @example
 * qualifiedToolName("collaboration", "send") // "collaboration__send"
 * qualifiedToolName(undefined, "shell")      // "shell"
 */
export function qualifiedToolName(namespace: string | undefined, name: string): string {
  if (!namespace || name.startsWith(`${namespace}__`) || name.startsWith("mcp__")) return name;
  return `${namespace}__${name}`;
}

const customParameters = {
  type: "object",
  properties: { input: { type: "string", description: "The raw input of this freeform tool." } },
  required: ["input"],
  additionalProperties: false,
};

/**
 * Collect the tools of a Responses request (top-level first, then additional_tools items).
 *
 * @example
 * const c = responsesToolCatalogue({ tools: [{ type: "function", name: "shell", parameters: { type: "object" } }] });
 * c.tools // [{ type: "function", function: { name: "shell", parameters: { type: "object" } } }]
 */
export function responsesToolCatalogue(body: Json): ToolCatalogue {
  const tools: ChatTool[] = [];
  const origins = new Map<string, ToolOrigin>();
  const dropped: string[] = [];
  const add = (t: Json, namespace: string | undefined, path: string) => {
    if (t === null || typeof t !== "object" || Array.isArray(t)) throw new TranslationError(path, `expected a tool object, got ${JSON.stringify(t)}`);
    const type = t.type ?? "function";
    if (type === "namespace") {
      (Array.isArray(t.tools) ? t.tools : []).forEach((child: Json, i: number) => add(child, String(t.name ?? ""), `${path}.tools[${i}]`));
      return;
    }
    if (type !== "function" && type !== "custom") {
      dropped.push(String(type));
      return;
    }
    const declared = String(t.name ?? t.function?.name ?? "");
    if (declared === "") return;
    const chatName = qualifiedToolName(namespace, declared);
    if (origins.has(chatName)) return; // first declaration wins, as in the Responses API
    const fn: ChatTool["function"] = { name: chatName };
    const description = t.description ?? t.function?.description;
    if (typeof description === "string") fn.description = description;
    if (type === "custom") {
      fn.parameters = customParameters;
      // Grammar/format constraints of freeform tools have no Chat equivalent; say so in the description.
      if (t.format?.type === "grammar" && typeof t.format.definition === "string") {
        fn.description = `${fn.description ?? ""}\n\nThe input must follow this ${t.format.syntax ?? ""} grammar:\n${t.format.definition}`.trim();
      }
    } else {
      fn.parameters = t.parameters ?? t.function?.parameters ?? { type: "object", properties: {} };
      const strict = t.strict ?? t.function?.strict;
      if (typeof strict === "boolean") fn.strict = strict;
    }
    tools.push({ type: "function", function: fn });
    origins.set(chatName, namespace ? { kind: type, name: declared, namespace } : { kind: type, name: declared });
  };
  (Array.isArray(body?.tools) ? body.tools : []).forEach((t: Json, i: number) => add(t, undefined, `tools[${i}]`));
  if (Array.isArray(body?.input)) {
    body.input.forEach((item: Json, i: number) => {
      if (item?.type === "additional_tools" && Array.isArray(item.tools)) item.tools.forEach((t: Json, j: number) => add(t, undefined, `input[${i}].tools[${j}]`));
    });
  }
  return { tools, origins, dropped };
}
