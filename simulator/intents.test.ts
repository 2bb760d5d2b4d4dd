import { describe, expect, test } from "bun:test";
import { parsePolicyScriptText } from "../schemas/testing.ts";
import { WORKING_DIRECTORY_PATTERNS } from "./intents.ts";
import { decideTurn, findWorkingDirectory } from "./policy.ts";
import type { SimMessage, SimTool } from "./types.ts";

// Qwen Code 0.15.10's file tools, as it sends them (abridged descriptions, same parameters).
const qwenTools: SimTool[] = [
  {
    type: "function",
    function: {
      name: "read_file",
      parameters: {
        type: "object",
        properties: {
          file_path: { type: "string", description: "The absolute path to the file to read (e.g., '/home/user/project/file.txt'). Relative paths are not supported. You must provide an absolute path." },
          offset: { type: "number" },
        },
        required: ["file_path"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "write_file",
      parameters: {
        type: "object",
        properties: {
          file_path: { type: "string", description: "The absolute path to the file to write to (e.g., '/home/user/project/file.txt'). Relative paths are not supported." },
          content: { type: "string", description: "The content to write to the file." },
        },
        required: ["file_path", "content"],
      },
    },
  },
];

// Qwen Code's first user turn (its environment context), then the task.
const qwenConversation = (cwd: string, task: string): SimMessage[] => [
  { role: "system", content: "You are Qwen Code, an interactive CLI agent developed by Alibaba Group." },
  {
    role: "user",
    content: [
      {
        type: "text",
        text: `This is the Qwen Code. We are setting up the context for our chat.\nMy operating system is: linux\nI'm currently working in the directory: ${cwd}\nHere is the folder structure of the current working directories:\n\n${cwd}/\n└───stock.csv`,
      },
    ],
  },
  { role: "assistant", content: "Got it. Thanks for the context!" },
  { role: "user", content: [{ type: "text", text: task }] },
];

describe("the workspace path in harness prompts", () => {
  test("Qwen Code's \"I'm currently working in the directory: …\"", () => {
    expect(findWorkingDirectory(qwenConversation("/tmp/r1/workspace", "hi"))).toBe("/tmp/r1/workspace");
  });

  test("every harness's phrasing, and none in a prompt without a path", () => {
    const found = (text: string) => findWorkingDirectory([{ role: "system", content: text }]);
    expect(found("<env>\n<cwd>/ws/a</cwd>\n</env>")).toBe("/ws/a");
    expect(found("Working directory: /ws/b\nTools: …")).toBe("/ws/b");
    expect(found("The current working directory is `/ws/c`.")).toBe("/ws/c");
    expect(found("I'm currently working in the directory: /ws/d\nHere is")).toBe("/ws/d");
    expect(found("cwd: /ws/e")).toBe("/ws/e");
    // A relative path or no path at all is not a workspace.
    expect(found("I'm currently working in the directory: somewhere")).toBeUndefined();
    expect(found("You are a helpful assistant.")).toBeUndefined();
    expect(WORKING_DIRECTORY_PATTERNS.length).toBeGreaterThanOrEqual(5);
  });

  test("Qwen Code's read_file / write_file get absolute paths (they refuse relative ones)", () => {
    const script = parsePolicyScriptText(
      `version: 1\nfailure_rate: 0\ntasks:\n  - name: t\n    match: stock.csv\n    steps:\n      - read: stock.csv\n      - write: { path: total.txt, content: "42\\n" }\n      - finish: done\n`,
      "inline.yaml",
    );
    const messages = qwenConversation("/tmp/r2/workspace", "stock.csv lists items; write the total to total.txt.");
    const read = decideTurn({ messages, tools: qwenTools, script, seed: 1 });
    expect(read.turn.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([["read_file", { file_path: "/tmp/r2/workspace/stock.csv" }]]);
    const afterRead: SimMessage[] = [
      ...messages,
      { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "read_file", arguments: read.turn.toolCalls[0]!.arguments } }] },
      { role: "tool", tool_call_id: "c1", content: "item,count\nbolts,12\n" },
    ];
    const write = decideTurn({ messages: afterRead, tools: qwenTools, script, seed: 1 });
    expect(write.turn.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([["write_file", { file_path: "/tmp/r2/workspace/total.txt", content: "42\n" }]]);
  });
});
