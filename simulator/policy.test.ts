import { describe, expect, test } from "bun:test";
import { parsePolicyScriptFile, PolicyScriptSchema } from "../schemas/index.ts";
import { fillPlaceholders, findNamedTool, planToolCall, shellWrite } from "./intents.ts";
import { corrupt, decideTurn, deriveFailingSteps, firstUrl, imageSinceLastTurn, NO_IMAGE_ANSWER } from "./policy.ts";
import type { JsonSchema, SimMessage, SimTool } from "./types.ts";

const tool = (name: string, properties: Record<string, JsonSchema>, required: string[] = Object.keys(properties)): SimTool => ({
  type: "function",
  function: { name, parameters: { type: "object", properties, required } },
});
const str = (description = "") => ({ type: "string", description });

const quickstart = parsePolicyScriptFile(`${import.meta.dir}/../examples/policies/quickstart.yaml`);
const forgeReact = [tool("bash", { command: str() }), tool("read", { path: str() }), tool("write", { path: str(), content: str() }), tool("finish", { answer: str() })];

const conversation = (instruction: string, system = "Working directory: /ws/r1"): SimMessage[] => [
  { role: "system", content: system },
  { role: "user", content: instruction },
];

describe("intent → offered tool", () => {
  test("Claude Code: Bash and Write (absolute file_path from the prompt's cwd)", () => {
    const tools = [
      tool("Bash", { command: str(), description: str(), timeout: { type: "number" } }, ["command"]),
      tool("Write", { file_path: str("The absolute path to the file to write"), content: str() }),
    ];
    expect(planToolCall({ kind: "bash", command: "ls" }, tools)).toEqual({ name: "Bash", arguments: '{"command": "ls"}' });
    expect(planToolCall({ kind: "write", path: "a.txt", content: "x" }, tools, { cwd: "/ws/r1" })).toEqual({
      name: "Write",
      arguments: '{"file_path": "/ws/r1/a.txt", "content": "x"}',
    });
  });

  test("Codex shell takes argv; exec_command takes cmd; opencode's required description is filled", () => {
    const codex = [tool("shell", { command: { type: "array", items: { type: "string" } }, workdir: str() }, ["command"])];
    expect(JSON.parse(planToolCall({ kind: "bash", command: "echo hi" }, codex)!.arguments)).toEqual({ command: ["bash", "-lc", "echo hi"] });
    expect(JSON.parse(planToolCall({ kind: "bash", command: "pwd" }, [tool("exec_command", { cmd: str() })])!.arguments)).toEqual({ cmd: "pwd" });
    const opencode = [tool("bash", { command: str(), description: str() })];
    expect(JSON.parse(planToolCall({ kind: "bash", command: "pwd" }, opencode)!.arguments)).toEqual({ command: "pwd", description: "Run pwd" });
  });

  test("Qwen Code run_shell_command / write_file; a write with no write tool goes through the shell", () => {
    const qwen = [tool("run_shell_command", { command: str() }), tool("write_file", { file_path: str(), content: str() })];
    expect(planToolCall({ kind: "write", path: "b.txt", content: "y\n" }, qwen)!.name).toBe("write_file");
    const onlyShell = [tool("run_shell_command", { command: str() })];
    const call = planToolCall({ kind: "write", path: "dir/b.txt", content: "y\n" }, onlyShell)!;
    expect(JSON.parse(call.arguments).command).toBe("mkdir -p dir && cat > dir/b.txt <<'FORGE_EOF'\ny\nFORGE_EOF");
    expect(planToolCall({ kind: "read", path: "b.txt" }, onlyShell)!.arguments).toBe('{"command": "cat b.txt"}');
  });

  test("shell writes reproduce the bytes exactly", async () => {
    for (const content of ["no newline", "two\nlines\n", "it's $HOME `x`\n", "FORGE_EOF\n"]) {
      const dir = `${process.env.TMPDIR ?? "/tmp"}/forge-sim-${process.pid}-${Math.random().toString(36).slice(2)}`;
      const proc = Bun.spawn(["bash", "-c", `mkdir -p ${dir} && cd ${dir} && ${shellWrite("sub/f.txt", content)}`]);
      expect(await proc.exited).toBe(0);
      expect(await Bun.file(`${dir}/sub/f.txt`).text()).toBe(content);
    }
  });

  test("no tools → no call; finish uses a finish tool when offered", () => {
    expect(planToolCall({ kind: "bash", command: "ls" }, [])).toBeUndefined();
    expect(planToolCall({ kind: "finish", text: "ok" }, forgeReact)).toEqual({ name: "finish", arguments: '{"answer": "ok"}' });
    expect(planToolCall({ kind: "finish", text: "ok" }, [tool("Bash", { command: str() })])).toBeUndefined();
  });
});

describe("scripted policy", () => {
  test("the step is the number of tool results after the task's user message", () => {
    const messages = conversation("Create hello.txt containing exactly one line: Hello, OpenForge!");
    const first = decideTurn({ messages, tools: forgeReact, script: { ...quickstart, failure_rate: 0, tasks: quickstart.tasks.map((t) => ({ ...t, failure_rate: 0 })) }, seed: 1 });
    expect(first).toMatchObject({ task: "hello-file", step: 0, failing: false });
    expect(first.turn.toolCalls[0]).toEqual({ name: "write", arguments: '{"path": "hello.txt", "content": "Hello, OpenForge!\\n"}' });
    const after: SimMessage[] = [
      ...messages,
      { role: "assistant", content: null, tool_calls: [{ id: "c1", function: { name: "write", arguments: first.turn.toolCalls[0]!.arguments } }] },
      { role: "tool", tool_call_id: "c1", content: "ok" },
    ];
    const second = decideTurn({ messages: after, tools: forgeReact, script: quickstart, seed: 1 });
    expect(second.step).toBe(1);
    expect(second.turn.toolCalls[0]!.name).toBe("finish");
  });

  test("context appended after the prompt (OpenClaw) and a re-sent prompt do not restart the steps", () => {
    const messages = conversation("Create hello.txt containing exactly one line: Hello, OpenForge!");
    const toolTurn: SimMessage[] = [{ role: "assistant", content: null, tool_calls: [{ id: "c1", function: { name: "write", arguments: "{}" } }] }, { role: "tool", tool_call_id: "c1", content: "ok" }];
    const appended = decideTurn({ messages: [...messages, ...toolTurn, { role: "user", content: "<internal-context>time: now</internal-context>" }], tools: forgeReact, script: quickstart, seed: 1 });
    expect(appended).toMatchObject({ task: "hello-file", step: 1 });
    const resent = decideTurn({ messages: [...messages, ...toolTurn, { role: "user", content: "Reminder: Create hello.txt containing exactly one line: Hello, OpenForge!" }], tools: forgeReact, script: quickstart, seed: 1 });
    expect(resent).toMatchObject({ task: "hello-file", step: 1 });
    const first = decideTurn({ messages, tools: forgeReact, script: quickstart, seed: 1 });
    expect(resent.failing).toBe(first.failing);
  });

  test("regex matchers and task order; unmatched prompts get the default policy", () => {
    const script = PolicyScriptSchema.parse({
      tasks: [
        { name: "a", match: { regex: "^compute \\d+$" }, steps: [{ say: "A" }] },
        { name: "b", match: ["other", { contains: "compute" }], steps: [{ say: "B" }] },
      ],
    });
    expect(decideTurn({ messages: conversation("Compute 42"), tools: [], script, seed: 0 }).turn.content).toBe("A");
    expect(decideTurn({ messages: conversation("please compute it"), tools: [], script, seed: 0 }).turn.content).toBe("B");
    const fallback = decideTurn({ messages: conversation("what?"), tools: [], script, seed: 0 });
    expect(fallback.task).toBeUndefined();
    expect(fallback.turn.content).toContain("what?");
  });

  test("default policy: one tool call when the prompt asks for it, then a report", () => {
    const script = PolicyScriptSchema.parse({});
    const ask = conversation("Please run `ls -la` and tell me what you see");
    const call = decideTurn({ messages: ask, tools: forgeReact, script, seed: 0 }).turn.toolCalls[0];
    expect(call).toEqual({ name: "bash", arguments: '{"command": "ls -la"}' });
    const write = decideTurn({ messages: conversation('Create a file named notes.txt containing "hi there"'), tools: forgeReact, script, seed: 0 });
    expect(JSON.parse(write.turn.toolCalls[0]!.arguments)).toEqual({ path: "notes.txt", content: "hi there" });
    for (const [prompt, path, content] of [
      ["Create hello.txt with the content \"hi\\n\"", "hello.txt", "hi\n"],
      ["Write 'forty two' to answer.txt", "answer.txt", "forty two"],
      ["create the file out/notes.md containing exactly `abc`", "out/notes.md", "abc"],
    ] as const) {
      expect(JSON.parse(decideTurn({ messages: conversation(prompt), tools: forgeReact, script, seed: 0 }).turn.toolCalls[0]!.arguments)).toEqual({ path, content });
    }
    expect(decideTurn({ messages: conversation("show me the contents of src/main.ts"), tools: forgeReact, script, seed: 0 }).turn.toolCalls[0]).toEqual({ name: "read", arguments: '{"path": "src/main.ts"}' });
    const done = decideTurn({ messages: [...ask, { role: "assistant", content: "" }, { role: "tool", content: "file-a\nfile-b" }], tools: forgeReact, script, seed: 0 });
    expect(done.turn).toEqual({ content: "Done. The tool returned:\nfile-a\nfile-b", toolCalls: [] });
  });

  test("failure_rate: the failing share over many seeds matches the rate; a conversation stays consistent", () => {
    const task = quickstart.tasks.find((t) => t.name === "sum-numbers")!;
    const messages = conversation("numbers.txt has one integer per line; write their sum to sum.txt");
    let failing = 0;
    const runs = 2000;
    for (let seed = 0; seed < runs; seed++) {
      const d = decideTurn({ messages, tools: forgeReact, script: quickstart, seed });
      if (d.failing) failing++;
      // The same conversation, one turn later, keeps its variant.
      const later = decideTurn({ messages: [...messages, { role: "assistant", content: "" }, { role: "tool", content: "1\n2\n" }], tools: forgeReact, script: quickstart, seed });
      expect(later.failing).toBe(d.failing);
    }
    expect(Math.abs(failing / runs - task.failure_rate!)).toBeLessThan(0.04);
  });

  test("k rollouts of one task differ by their workspace (system prompt) or x-forge-rollout key", () => {
    const instruction = "Write the contents of input.txt in upper case to output.txt";
    let failing = 0;
    for (let r = 0; r < 1000; r++) {
      if (decideTurn({ messages: conversation(instruction, `Working directory: /data/rollouts/r${r}`), tools: forgeReact, script: quickstart, seed: 5 }).failing) failing++;
    }
    expect(Math.abs(failing / 1000 - 0.3)).toBeLessThan(0.05);
    let keyed = 0;
    for (let r = 0; r < 1000; r++) {
      if (decideTurn({ messages: conversation(instruction), tools: forgeReact, script: quickstart, seed: 5, conversationKey: `rollout-${r}` }).failing) keyed++;
    }
    expect(Math.abs(keyed / 1000 - 0.3)).toBeLessThan(0.05);
  });

  test("a system prompt that changes between turns (file listings) keeps the variant when it names the cwd", () => {
    const instruction = "Write the contents of input.txt in upper case to output.txt";
    for (let seed = 0; seed < 200; seed++) {
      const before = decideTurn({ messages: conversation(instruction, "Working directory: /w/r1\nFiles: input.txt"), tools: forgeReact, script: quickstart, seed });
      const after = decideTurn({ messages: conversation(instruction, "Working directory: /w/r1\nFiles: input.txt output.txt"), tools: forgeReact, script: quickstart, seed });
      expect(after.failing).toBe(before.failing);
    }
  });

  test("derived failing variant: wrong content or a skipped step", () => {
    expect(corrupt("total: 42\n")).toBe("total: 43\n");
    expect(corrupt("hello world")).toBe("hello ");
    const steps = [{ write: { path: "a", content: "v1" } }, { finish: "done" }];
    expect(deriveFailingSteps(steps, 7)).toEqual([{ write: { path: "a", content: "v2" } }, { finish: "done" }]);
    expect(deriveFailingSteps([{ bash: "make" }, { finish: "done" }], 7)).toEqual([{ finish: "done" }]);
  });

  test("thinking from the script; a step's think text is the reasoning", () => {
    const d = decideTurn({ messages: conversation("Fix greet.sh so that `bash greet.sh World` prints: Hello, World!"), tools: forgeReact, script: quickstart, seed: 3 });
    expect(d.turn.reasoning).toBeString();
    expect(decideTurn({ messages: conversation("Fix greet.sh"), tools: forgeReact, script: quickstart, seed: 3, enableThinking: false }).turn.reasoning).toBeUndefined();
  });
});

describe("browser scripts: named tools, {{url}}, expect: image", () => {
  const gui = parsePolicyScriptFile(`${import.meta.dir}/../examples/policies/gui-quickstart.yaml`);
  const mcp = (prefix: string) => [
    tool(`${prefix}browser_navigate`, { url: str() }),
    tool(`${prefix}browser_take_screenshot`, { type: { type: "string", enum: ["png", "jpeg"] }, scale: { type: "string", default: "css" } }, ["scale"]),
    tool(`${prefix}browser_click`, { element: str(), target: str() }, ["target"]),
    tool(`${prefix}browser_mouse_click_xy`, { x: { type: "number" }, y: { type: "number" } }),
    tool(`${prefix}browser_type`, { element: str(), target: str(), text: str(), submit: { type: "boolean" } }, ["target", "text"]),
  ];
  const prompt = "Open the website at http://127.0.0.1:8000 in the browser and subscribe to its newsletter with the name Ada Lovelace and the email address ada@example.com.";
  const screenshot = { role: "user" as const, content: [{ type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }] };
  const answered = (name: string, withImage: boolean): SimMessage[] => [
    { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name, arguments: "{}" } }] },
    { role: "tool", tool_call_id: "c1", content: "### Result" },
    ...(withImage ? [screenshot] : []),
  ];
  const rollout = (messages: SimMessage[], tools: SimTool[]) => decideTurn({ messages, tools, script: { ...gui, failure_rate: 0, tasks: gui.tasks.map((t) => ({ ...t, failure_rate: 0 })) }, seed: 1, conversationKey: "r1" });

  test("a step's tool is found by its own name under each harness's prefix, with the prompt's URL filled in", () => {
    for (const prefix of ["", "mcp__browser__", "browser_"]) {
      const { turn, task } = rollout(conversation(prompt), mcp(prefix));
      expect(task).toBe("newsletter-signup");
      expect(turn.toolCalls).toEqual([{ name: `${prefix}browser_navigate`, arguments: '{"url": "http://127.0.0.1:8000"}' }]);
    }
  });

  test("expect: image plays the step when the screenshot came back (a user turn after the tool result), and gives up when it did not", () => {
    const tools = mcp("mcp__browser__");
    const navigated = [...conversation(prompt), ...answered("mcp__browser__browser_navigate", false)];
    const seen = rollout([...navigated, ...answered("mcp__browser__browser_take_screenshot", true)], tools);
    expect(seen.turn.toolCalls[0]).toEqual({ name: "mcp__browser__browser_type", arguments: '{"element": "Name field", "target": "#name", "text": "Ada Lovelace"}' });
    const blind = rollout([...navigated, ...answered("mcp__browser__browser_take_screenshot", false)], tools);
    expect(blind.turn.toolCalls).toEqual([]);
    expect(blind.turn.content).toBe(NO_IMAGE_ANSWER);
  });

  test("an image inside the tool message's own parts counts too; one before the last assistant turn does not", () => {
    expect(imageSinceLastTurn([{ role: "tool", content: [{ type: "text", text: "shot" }, { type: "image", source: {} }] }])).toBe(true);
    expect(imageSinceLastTurn([screenshot, { role: "assistant", content: "ok" }, { role: "tool", content: "done" }])).toBe(false);
  });

  test("a prompt read back from ids (token-in): the template's image placeholder in a turn after the last assistant turn is an image", () => {
    const shot = { role: "user" as const, content: "<|vision_start|><|image_pad|><|vision_end|>" };
    expect(imageSinceLastTurn([{ role: "assistant", content: "ok" }, { role: "tool", content: "<tool_response>\ndone\n</tool_response>" }, shot])).toBe(true);
    expect(imageSinceLastTurn([shot, { role: "assistant", content: "ok" }, { role: "tool", content: "done" }])).toBe(false);
    expect(imageSinceLastTurn([{ role: "assistant", content: "ok" }, { role: "user", content: "no image here" }])).toBe(false);
  });

  test("the default policy's echo leaves an image's placeholder out: a model never samples <|image_pad|>", () => {
    const turn = decideTurn({ messages: [{ role: "user", content: "<|vision_start|><|image_pad|><|vision_end|>\nWhat is this?" }], tools: [], script: { version: 1, tasks: [] } as never, seed: 1 });
    expect(turn.turn.content).toBe("You said: \nWhat is this?");
  });

  test("placeholders: {{url}} without its trailing slash, {{cwd}}, nested values; unknown ones stay", () => {
    expect(fillPlaceholders({ a: "{{url}}/cart", b: ["{{ cwd }}/x", 3], c: "{{other}}" }, { url: "http://h:1/", cwd: "/ws" })).toEqual({ a: "http://h:1/cart", b: ["/ws/x", 3], c: "{{other}}" });
    expect(firstUrl("see http://127.0.0.1:8000/a?b=1. Then")).toBe("http://127.0.0.1:8000/a?b=1");
    expect(findNamedTool(mcp("mcp__browser__"), "browser_click")?.function.name).toBe("mcp__browser__browser_click");
    expect(findNamedTool(mcp(""), "browser_hover")).toBeUndefined();
  });

  test("a tool the harness does not offer becomes text saying so; a script step with two actions is refused", () => {
    const { turn } = rollout(conversation(prompt), [tool("Bash", { command: str() })]);
    expect(turn.toolCalls).toEqual([]);
    expect(turn.content).toContain("Call browser_navigate");
    expect(PolicyScriptSchema.safeParse({ tasks: [{ name: "x", match: "y", steps: [{ tool: { name: "a" }, bash: "ls" }] }] }).success).toBe(false);
    expect(PolicyScriptSchema.safeParse({ tasks: [{ name: "x", match: "y", steps: [{ tool: { name: "a" }, expect: "sound" }] }] }).success).toBe(false);
  });
});
