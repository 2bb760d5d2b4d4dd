/**
 * The simulated policy: decides what the model says in one assistant turn, from the script,
 * the seed and the conversation so far. It is stateless across requests: the step to play is
 * the number of tool results the conversation holds after the task's (first) user message, and whether
 * the conversation plays the failing variant is a hash of
 *   seed · task · conversation key · choice index,
 * where the conversation key is the `x-forge-rollout` request header when present (the proxy
 * can send the rollout id), else the working directory the harness names in its prompt
 * (Claude Code, Codex, opencode and forge-react all do; each rollout has its own workspace),
 * else the system prompt's text — together with the user messages up to the task's message.
 * So k rollouts of one task differ, while the key stays constant across the turns of one
 * conversation (later messages, and system prompts that list files, do not change it).
 */
import type { PolicyScript, PolicyStep, TaskScript, PromptMatcher } from "../schemas/index.ts";
import { contentText } from "./messages.ts";
import { hashString, mix, unit } from "./hash.ts";
import { planToolCall, WORKING_DIRECTORY_PATTERNS, type Intent } from "./intents.ts";
import type { PolicyTurn, SimMessage, SimTool } from "./types.ts";

export interface TurnInput {
  messages: SimMessage[];
  tools: SimTool[];
  /** "none" forbids tool calls. */
  toolChoice?: unknown;
  script: PolicyScript;
  seed: number;
  /** Per-rollout nonce (the `x-forge-rollout` header). */
  conversationKey?: string;
  /** Index of the choice when n > 1: each choice is its own sample. */
  choiceIndex?: number;
  /** Request-level override (`chat_template_kwargs.enable_thinking`). */
  enableThinking?: boolean;
}

/** Which task and variant a conversation plays (exposed for tests and logs). */
export interface TurnDecision {
  turn: PolicyTurn;
  task?: string;
  failing: boolean;
  step: number;
}

/**
 * Decides the next assistant turn.
 *
 * @example
 * const { turn } = decideTurn({ messages: [{ role: "user", content: "hi" }], tools: [], script: parsePolicyScriptText("{}", "x"), seed: 1 });
 * turn.content; // an echo-ish answer
 */
export function decideTurn(input: TurnInput): TurnDecision {
  const { messages, script } = input;
  const tools = input.toolChoice === "none" ? [] : input.tools;
  const cwd = findWorkingDirectory(messages);
  const matched = matchTask(script, messages);
  const anchor = matched?.anchor ?? lastUserIndex(messages);
  const done = messages.slice(anchor + 1).filter((m) => m.role === "tool").length;
  const key = conversationKey(messages, anchor, input.conversationKey, cwd);
  const choice = input.choiceIndex ?? 0;

  if (!matched) {
    const turn = defaultTurn(messages, anchor, done, tools, cwd);
    return { turn: withThinking(turn, input.enableThinking ?? script.thinking, hashString(key)), failing: false, step: done };
  }
  const { task } = matched;
  const rate = task.failure_rate ?? script.failure_rate;
  const variantHash = mix(input.seed, hashString(task.name), hashString(key), choice);
  const failing = rate > 0 && unit(variantHash) < rate;
  const steps = failing ? (task.failing ?? deriveFailingSteps(task.steps, variantHash)) : task.steps;
  const step = steps[done];
  const url = firstUrl(contentText(messages[matched.anchor]!.content));
  const blind = step?.expect === "image" && !imageSinceLastTurn(messages);
  const turn = !step ? { content: "Done.", toolCalls: [] } : blind ? blindTurn(tools, cwd) : stepTurn(step, tools, cwd, url);
  const thinking = input.enableThinking ?? task.thinking ?? script.thinking;
  return { turn: withThinking(turn, thinking, variantHash, step?.think), task: task.name, failing, step: done };
}

function conversationKey(messages: SimMessage[], anchor: number, header: string | undefined, cwd: string | undefined): string {
  const users = messages
    .slice(0, anchor + 1)
    .filter((m) => m.role === "user")
    .map((m) => contentText(m.content));
  const system = messages.filter((m) => m.role === "system" || m.role === "developer").map((m) => contentText(m.content));
  const nonce = header !== undefined ? `rollout:${header}` : cwd !== undefined ? `cwd:${cwd}` : `system:${system.join("\n")}`;
  return [nonce, ...users].join("\u0000");
}

function withThinking(turn: PolicyTurn, thinking: boolean, hash: number, think?: string): PolicyTurn {
  if (!thinking) return turn;
  const planned = turn.toolCalls[0];
  const reasoning =
    think ??
    (planned
      ? `The next step is to call ${planned.name} with ${planned.arguments.length > 120 ? `${planned.arguments.slice(0, 117)}...` : planned.arguments}.`
      : ["I have what I need to answer.", "Let me answer directly.", "The answer is ready."][hash % 3]!);
  return { ...turn, reasoning };
}

/** The final answer of a policy that expected a screenshot and got none: the rollout ends unsolved. */
export const NO_IMAGE_ANSWER = "I expected a screenshot of the page, but no image came back, so I cannot go on.";

function blindTurn(tools: SimTool[], cwd?: string): PolicyTurn {
  return stepTurn({ finish: NO_IMAGE_ANSWER }, tools, cwd);
}

/** Image parts as the front doors and harnesses send them (Chat, Responses, Anthropic). */
const IMAGE_PART_TYPES = new Set(["image_url", "input_image", "image"]);

/**
 * Whether an image arrived after the latest assistant turn: in a tool message's content parts or
 * a user turn's (the proxy's translators move tool-result images into a user turn after the tool
 * messages, as Chat tool messages carry text only).
 *
 * @example
 * imageSinceLastTurn([{ role: "assistant", content: "" }, { role: "user", content: [{ type: "image_url", image_url: { url: "data:…" } }] }]); // true
 */
export function imageSinceLastTurn(messages: SimMessage[]): boolean {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role === "assistant") return false;
    if (Array.isArray(message.content) && message.content.some((part) => IMAGE_PART_TYPES.has(part.type))) return true;
    // A prompt that came as ids (token-in: /generate, /inference/v1/generate) reads back as text
    // holding the template's placeholder where each image is.
    if (renderedImage(message.content)) return true;
  }
  return false;
}

/** Qwen-VL's placeholder for an image in a rendered prompt (Qwen2-VL, Qwen2.5-VL, Qwen3-VL templates). */
const VISION_START = "<|vision_start|>";
const RENDERED_IMAGE = /<\|vision_start\|>[\s\S]*?<\|vision_end\|>/g;

function renderedImage(content: SimMessage["content"]): boolean {
  if (typeof content === "string") return content.includes(VISION_START);
  return Array.isArray(content) && content.some((part) => typeof (part as { text?: unknown }).text === "string" && (part as { text: string }).text.includes(VISION_START));
}

/** The first http(s) URL of a text, without trailing punctuation. */
export function firstUrl(text: string): string | undefined {
  return /https?:\/\/[^\s<>"'`)\]]+/.exec(text)?.[0]?.replace(/[.,;:!?]+$/, "");
}

/** Turns one script step into what the model says, using the offered tools. */
export function stepTurn(step: PolicyStep, tools: SimTool[], cwd?: string, url?: string): PolicyTurn {
  const say = step.say ?? "";
  const intent: Intent | undefined =
    step.bash !== undefined
      ? { kind: "bash", command: step.bash }
      : step.write
        ? { kind: "write", path: step.write.path, content: step.write.content }
        : step.read !== undefined
          ? { kind: "read", path: step.read }
          : step.finish !== undefined
            ? { kind: "finish", text: step.finish }
            : step.tool
              ? { kind: "tool", name: step.tool.name, arguments: step.tool.arguments }
              : undefined;
  if (!intent) return { content: say, toolCalls: [] };
  const planned = planToolCall(intent, tools, { cwd, url });
  if (planned) return { content: say, toolCalls: [planned] };
  // No fitting tool: say in text what would be done, so chat-only callers still get an answer.
  const text = intent.kind === "finish" ? intent.text : describeIntent(intent);
  return { content: [say, text].filter(Boolean).join("\n\n"), toolCalls: [] };
}

function describeIntent(intent: Intent): string {
  switch (intent.kind) {
    case "bash":
      return `Run this command:\n\`\`\`bash\n${intent.command}\n\`\`\``;
    case "write":
      return `Write ${intent.path}:\n\`\`\`\n${intent.content}\n\`\`\``;
    case "read":
      return `Read ${intent.path}.`;
    case "finish":
      return intent.text;
    case "tool":
      return `Call ${intent.name} with ${JSON.stringify(intent.arguments)} (no such tool is offered).`;
  }
}

/**
 * The failing variant when the script gives none: one action step (chosen by the hash) goes
 * wrong — a written file gets wrong content, a command or read is skipped.
 */
export function deriveFailingSteps(steps: PolicyStep[], hash: number): PolicyStep[] {
  const actions = steps.map((s, i) => ({ s, i })).filter(({ s }) => s.bash !== undefined || s.write !== undefined || s.read !== undefined || s.tool !== undefined);
  if (actions.length === 0) return steps.map((s) => (s.finish !== undefined ? { ...s, finish: "I could not complete the task." } : s));
  const { s: victim, i } = actions[mix(hash, 0x5eed) % actions.length]!;
  if (victim.write) {
    return steps.map((s, j) => (j === i ? { ...s, write: { path: victim.write!.path, content: corrupt(victim.write!.content) } } : s));
  }
  return steps.filter((_, j) => j !== i);
}

/** Content that is plausibly close but wrong: a digit changed, else the text cut short. */
export function corrupt(content: string): string {
  const digits = [...content.matchAll(/\d/g)];
  const last = digits.at(-1);
  if (last?.index !== undefined) {
    const d = (Number(last[0]) + 1) % 10;
    return content.slice(0, last.index) + d + content.slice(last.index + 1);
  }
  if (content.length <= 1) return `${content}?`;
  return content.slice(0, Math.ceil(content.length / 2));
}

/**
 * The task of the latest user message that matches one (script order breaks ties), anchored at
 * the earliest user message matching that task: a harness that re-sends the prompt or appends
 * context after it (OpenClaw) neither restarts the steps nor changes the conversation key.
 */
export function matchTask(script: PolicyScript, messages: SimMessage[]): { task: TaskScript; anchor: number } | undefined {
  const hits = (task: TaskScript, m: SimMessage) => {
    if (m.role !== "user") return false;
    const text = contentText(m.content);
    return (Array.isArray(task.match) ? task.match : [task.match]).some((matcher) => matches(matcher, text));
  };
  for (let i = messages.length - 1; i >= 0; i--) {
    const task = script.tasks.find((t) => hits(t, messages[i]!));
    if (task) return { task, anchor: messages.findIndex((m) => hits(task, m)) };
  }
  return undefined;
}

function matches(matcher: PromptMatcher, text: string): boolean {
  if (typeof matcher === "string") return text.toLowerCase().includes(matcher.toLowerCase());
  if ("contains" in matcher) return text.toLowerCase().includes(matcher.contains.toLowerCase());
  return new RegExp(matcher.regex, matcher.flags).test(text);
}

function lastUserIndex(messages: SimMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === "user") return i;
  return -1;
}

/** The workspace path harnesses write into their prompts (WORKING_DIRECTORY_PATTERNS). */
export function findWorkingDirectory(messages: SimMessage[]): string | undefined {
  for (const m of messages) {
    if (m.role !== "system" && m.role !== "developer" && m.role !== "user") continue;
    const text = contentText(m.content);
    for (const pattern of WORKING_DIRECTORY_PATTERNS) {
      const found = pattern.exec(text);
      if (found?.[1]) return found[1].trim();
    }
  }
  return undefined;
}

/**
 * The policy without a script (or no task matched): one tool call when tools are offered and the
 * prompt asks for one (a command in backticks, "create a file X containing Y", "read X"), then
 * a short report of the result; otherwise an echo-ish answer.
 */
function defaultTurn(messages: SimMessage[], anchor: number, done: number, tools: SimTool[], cwd?: string): PolicyTurn {
  // An image's placeholder in a prompt read back from ids (token-in) is not text to echo: a model
  // never samples <|image_pad|>, and one in a completion would count as an image of the chain.
  const prompt = anchor >= 0 ? contentText(messages[anchor]!.content).replace(RENDERED_IMAGE, "") : "";
  if (done > 0) {
    const result = contentText([...messages].reverse().find((m) => m.role === "tool")?.content).trim();
    const shown = result.length > 200 ? `${result.slice(0, 197)}...` : result;
    return { content: shown ? `Done. The tool returned:\n${shown}` : "Done.", toolCalls: [] };
  }
  if (tools.length > 0) {
    const intent = requestedIntent(prompt);
    const planned = intent && planToolCall(intent, tools, { cwd });
    if (planned) return { content: "", toolCalls: [planned] };
  }
  const shown = prompt.length > 500 ? `${prompt.slice(0, 497)}...` : prompt;
  return { content: shown ? `You said: ${shown}` : "Hello! How can I help?", toolCalls: [] };
}

const QUOTED = "[`\"']([^`\"']*)[`\"']";
const FILE = "[`\"']?([\\w.-]*[\\w-]\\.[\\w]+|[\\w.-]+/[\\w./-]+)[`\"']?";
const WRITE_PATTERNS = [
  // "Create (a file named) hello.txt containing 'hi'", "create notes.md with the content "x""
  { re: new RegExp(`(?:create|write|make) (?:a |the )?(?:new )?(?:file )?(?:named |called )?${FILE},? (?:with|containing|that contains)(?: the| exactly)?(?: content| contents| text| line)?:?\\s*${QUOTED}`, "i"), path: 1, content: 2 },
  // "write 'hi' to hello.txt"
  { re: new RegExp(`write ${QUOTED} (?:in)?to (?:a |the )?(?:file )?(?:named |called )?${FILE}`, "i"), path: 2, content: 1 },
];

function requestedIntent(prompt: string): Intent | undefined {
  for (const pattern of WRITE_PATTERNS) {
    const write = pattern.re.exec(prompt);
    if (write) return { kind: "write", path: write[pattern.path]!, content: write[pattern.content]!.replaceAll("\\n", "\n") };
  }
  const fenced = /```(?:bash|sh|shell)?\n([\s\S]*?)```/.exec(prompt);
  if (fenced && /\b(run|execute)\b/i.test(prompt)) return { kind: "bash", command: fenced[1]!.trim() };
  const inline = /\b(?:run|execute)\b[^`]*`([^`\n]+)`/i.exec(prompt);
  if (inline) return { kind: "bash", command: inline[1]! };
  const read = new RegExp(`\\b(?:read|show|cat|print)\\b (?:me )?(?:the )?(?:contents of )?(?:the )?(?:file )?${FILE}`, "i").exec(prompt);
  if (read) return { kind: "read", path: read[1]! };
  return undefined;
}
