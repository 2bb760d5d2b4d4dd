import { describe, expect, test } from "bun:test";
import { Protocol } from "../../schemas/index.ts";
import { callRecord } from "../testing.ts";
import { extractCall } from "./index.ts";

const steps = [
  { id: "a", name: "bash", args: { command: "ls" }, result: "x" },
  { id: "b", name: "read_file", args: { path: "p" }, result: "y" },
];

function viewOf(protocol: "chat" | "responses" | "anthropic", stream: boolean) {
  const record = callRecord({ rollout: "r", seq: 3, protocol, stream, tools: ["bash", "read_file", "edit"], history: steps, calls: steps, text: "hi" });
  if (record.kind.case !== "modelCall") throw new Error("fixture");
  return extractCall(record.kind.value);
}

describe("extractCall", () => {
  for (const protocol of ["chat", "responses", "anthropic"] as const) {
    for (const stream of [false, true]) {
      test(`${protocol}${stream ? " stream" : ""}: tools offered, uses, results, text`, () => {
        const view = viewOf(protocol, stream);
        expect(view.toolsOffered).toEqual(["bash", "read_file", "edit"]);
        expect(view.toolUses.map((u) => [u.id, u.name, JSON.parse(u.arguments)])).toEqual([
          ["a", "bash", { command: "ls" }],
          ["b", "read_file", { path: "p" }],
        ]);
        // Each result carries its tool's name, from the call of the same id in the history.
        expect(view.toolResults.map((r) => [r.id, r.text, r.name])).toEqual([
          ["a", "x", "bash"],
          ["b", "y", "read_file"],
        ]);
        expect(view.assistantText).toBe("hi");
      });
    }
  }

  test("Anthropic is_error is kept; other protocols leave it to the classifier", () => {
    const record = callRecord({ rollout: "r", seq: 2, protocol: "anthropic", tools: [], history: [{ id: "e", name: "Bash", args: {}, result: "no", isError: true }], calls: [] });
    if (record.kind.case !== "modelCall") throw new Error("fixture");
    expect(extractCall(record.kind.value).toolResults).toEqual([{ id: "e", text: "no", isError: true, name: "Bash" }]);
    expect(viewOf("chat", false).toolResults[0]!.isError).toBeNull();
  });

  test("Responses local_shell_call and custom_tool_call items", () => {
    const body = { output: [
      { type: "local_shell_call", call_id: "s", action: { type: "exec", command: ["bash", "-lc", "ls"] } },
      { type: "custom_tool_call", call_id: "p", name: "apply_patch", input: "*** Begin Patch" },
    ] };
    const view = extractCall({ protocol: Protocol.RESPONSES, stream: false, requestBody: new Uint8Array(), responseBody: new TextEncoder().encode(JSON.stringify(body)) });
    expect(view.toolUses.map((u) => [u.id, u.name])).toEqual([["s", "local_shell"], ["p", "apply_patch"]]);
  });

  test("bodies that are not JSON, and completions, give empty views", () => {
    const junk = new TextEncoder().encode("<html>502</html>");
    expect(extractCall({ protocol: Protocol.CHAT, stream: false, requestBody: junk, responseBody: junk }).toolUses).toEqual([]);
    expect(extractCall({ protocol: Protocol.COMPLETIONS, stream: false, requestBody: junk, responseBody: junk }).toolsOffered).toEqual([]);
  });
});
