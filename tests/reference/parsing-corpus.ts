/**
 * The parsing suite's corpus: model outputs (as the text the model wrote, before the
 * end-of-turn token), parsed by model/ and by vLLM 0.33.0 (tests/reference/parsing.test.ts).
 * Add a case by appending to OUTPUTS.
 */

export const TOOLS = [
  {
    type: "function",
    function: {
      name: "f",
      description: "A tool with every type.",
      parameters: {
        type: "object",
        properties: {
          a: { type: "integer" },
          s: { type: "string" },
          o: { type: "object" },
          b: { type: "boolean" },
          n: { type: ["number", "null"] },
          arr: { type: "array", items: { type: "integer" } },
          e: { enum: ["x", 1, null] },
        },
      },
    },
  },
  { type: "function", function: { name: "bash", parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } } },
  { type: "function", function: { name: "write", parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } } } } },
];

export interface OutputCase {
  name: string;
  text: string;
}

/** Qwen3's `<|im_end|>`: the end-of-turn token, sampled last when an answer ends on its own. */
export const IM_END = 151645;

/** How the token-in suites have the engine end each corpus output, and whether the prompt asks for thinking. */
export const ENGINE_ENDINGS = [["end-of-turn", true], ["max_tokens", true], ["end-of-turn", false]] as const;

/**
 * A corpus output's ids (`encoded`) and finish as the engine returns them: the end-of-turn token
 * last, or cut short by max_tokens.
 *
 * @example
 * engineEnded([9707, 13], "end-of-turn") // { ids: [9707, 13, 151645], finish: { reason: "stop", stopToken: true } }
 */
export function engineEnded(encoded: number[], ending: (typeof ENGINE_ENDINGS)[number][0]): { ids: number[]; finish: { reason: string; stopToken: boolean } } {
  if (ending === "end-of-turn") return { ids: [...encoded, IM_END], finish: { reason: "stop", stopToken: true } };
  return { ids: encoded.slice(0, Math.max(1, Math.ceil(encoded.length * 0.7))), finish: { reason: "length", stopToken: false } };
}

const hermes = (name: string, args: string) => `<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;
const xml = (name: string, params: [string, string][]) => `<tool_call>\n<function=${name}>\n${params.map(([k, v]) => `<parameter=${k}>\n${v}\n</parameter>\n`).join("")}</function>\n</tool_call>`;
const think = (r: string) => `<think>\n${r}\n</think>\n\n`;

export const OUTPUTS: OutputCase[] = [
  // Reasoning.
  { name: "think then content", text: `${think("Let me think.")}Hello there.` },
  { name: "empty think block then content", text: `${think("")}Hello there.` },
  { name: "no think block", text: "Just an answer, no think block." },
  { name: "unterminated think (cut by max_tokens)", text: "<think>\nStill thinking about it and" },
  { name: "think only", text: think("Only thoughts.") },
  { name: "no newlines around the think block", text: "<think>terse</think>answer" },
  { name: "a second </think> in the content", text: `${think("r")}one</think>two` },
  { name: "<think> inside the content", text: `${think("r")}see <think>this</think> tag` },
  { name: "non-ASCII reasoning and content", text: `${think("Überlegung: 思考中… 🤔")}Réponse : 你好 👋` },
  { name: "special tokens in the output", text: `${think("r")}a<|im_start|>b<|im_end|>c<|fim_prefix|>d<|endoftext|>e` },
  { name: "long content", text: `${think("plan")}${"All work and no play makes Jack a dull boy. ".repeat(40)}` },
  // Hermes tool calls.
  { name: "one call", text: `${think("Call it.")}${hermes("bash", '{"command": "ls -la"}')}` },
  { name: "one call without a think block", text: hermes("bash", '{"command": "ls"}') },
  { name: "text then a call", text: `${think("")}Running it.\n${hermes("bash", '{"command": "ls"}')}` },
  { name: "a call then text after it", text: `${think("")}${hermes("bash", '{"command": "ls"}')}\nAnd some text after.` },
  { name: "two calls", text: `${think("")}${hermes("bash", '{"command": "ls"}')}\n${hermes("write", '{"path": "a.txt", "content": "hi\\n"}')}` },
  { name: "three calls with text", text: `${think("three")}Three at once.\n${hermes("bash", '{"command": "a"}')}\n${hermes("bash", '{"command": "b"}')}\n${hermes("bash", '{"command": "c"}')}` },
  { name: "compact arguments", text: `${think("")}${hermes("bash", '{"command":"ls"}')}` },
  { name: "nested arguments", text: `${think("")}${hermes("f", '{"o": {"k": [1, 2.5, {"z": null}]}, "arr": [1, 2]}')}` },
  { name: "non-ASCII arguments", text: `${think("")}${hermes("write", '{"path": "ü.txt", "content": "héllo 你好 🎉\\n"}')}` },
  { name: "float and big-integer arguments", text: `${think("")}${hermes("f", '{"n": 1.0, "a": 123456789012345678901, "x": 1e-7}')}` },
  { name: "arguments as a string", text: `${think("")}${hermes("bash", '"{\\"command\\": \\"ls\\"}"')}` },
  { name: "null arguments", text: `${think("")}${hermes("bash", "null")}` },
  { name: "no arguments key", text: `${think("")}<tool_call>\n{"name": "bash"}\n</tool_call>` },
  { name: "no name", text: `${think("")}<tool_call>\n{"arguments": {"command": "ls"}}\n</tool_call>` },
  { name: "name that is not a string", text: `${think("")}<tool_call>\n{"name": 5, "arguments": {}}\n</tool_call>` },
  { name: "invalid JSON in a call", text: `${think("")}<tool_call>\n{"name": "bash", "arguments": {"command": ls}}\n</tool_call>` },
  { name: "one good call, one bad", text: `${think("")}${hermes("bash", '{"command": "ls"}')}\n<tool_call>{bad}</tool_call>` },
  { name: "unterminated call (no </tool_call>)", text: `${think("")}<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n` },
  { name: "call cut inside the arguments", text: `${think("")}<tool_call>\n{"name": "bash", "arguments": {"command": "ls -l` },
  { name: "call cut inside the name", text: `${think("")}<tool_call>\n{"name": "ba` },
  { name: "empty tool call", text: `${think("")}<tool_call></tool_call>` },
  { name: "a call inside the think block", text: `<think>\nI will ${hermes("bash", '{"command": "ls"}')}` },
  { name: "whitespace-only content before a call", text: `${think("")}  \n${hermes("bash", '{"command": "ls"}')}` },
  { name: "a JSON object in the text, no call", text: `${think("")}Here is JSON: {"name": "bash", "arguments": {}}` },
  // Qwen3-Coder XML tool calls.
  { name: "XML call", text: `${think("x")}${xml("bash", [["command", "ls -la"]])}` },
  { name: "XML call typed by the schema", text: `${think("")}${xml("f", [["a", "5"], ["s", " spaced "], ["o", '{"k": [1, 2.5]}'], ["b", "True"], ["n", "null"], ["arr", "[1, 2]"], ["e", "x"]])}` },
  { name: "XML values that do not fit their type", text: `${think("")}${xml("f", [["a", "five"], ["n", "1e999"], ["o", "not json"], ["b", "maybe"], ["arr", "1"]])}` },
  { name: "XML number forms", text: `${think("")}${xml("f", [["a", " 1_000 "], ["n", "2.50"]])}` },
  { name: "XML multi-line value", text: `${think("")}${xml("write", [["path", "a.py"], ["content", "def f():\n    return 1\n"]])}` },
  { name: "XML two calls with text before", text: `${think("")}Doing two things.\n${xml("bash", [["command", "ls"]])}\n${xml("bash", [["command", "pwd"]])}` },
  { name: "XML call to a tool not offered", text: `${think("")}${xml("unknown_tool", [["x", "1"]])}` },
  { name: "XML parameter without a closing tag", text: `${think("")}<tool_call>\n<function=bash>\n<parameter=command>\nls\n</function>\n</tool_call>` },
  { name: "XML call without </function> or </tool_call>", text: `${think("")}<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n` },
  { name: "XML <function= without <tool_call>", text: `${think("")}<function=bash>\n<parameter=command>\nls\n</parameter>\n</function>` },
  { name: "XML unclosed function name", text: `${think("")}<tool_call>\n<function=bash</tool_call>` },
  { name: "XML repeated parameter", text: `${think("")}${xml("bash", [["command", "a"], ["command", "b"]])}` },
];
