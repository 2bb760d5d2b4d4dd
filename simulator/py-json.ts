/**
 * JSON as Python's `json.dumps(value, ensure_ascii=False)` writes it (", " and ": "
 * separators). Qwen3's chat template serialises tools with `tojson`, and the model writes its
 * tool-call arguments in the same style, so the simulator must too for the prompt tokens to
 * match what vLLM would render.
 *
 * @example
 * pyJson({ name: "bash", arguments: { command: "ls" } }); // '{"name": "bash", "arguments": {"command": "ls"}}'
 */
export function pyJson(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (Array.isArray(value)) return `[${value.map(pyJson).join(", ")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${pyJson(v)}`).join(", ")}}`;
  }
  return "null";
}
