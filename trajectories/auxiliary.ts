/**
 * Auxiliary calls: model calls a harness makes beside its agent loop — session titles, compaction
 * summaries, classifiers, quota probes. They are the policy's output too, but not the agent's
 * work on the task, so they never carry the rollout's reward (docs/trajectories.md).
 *
 * Two ways to recognise one:
 * - **by fingerprint**, per harness: the harness's own prompt for that side call, found in the
 *   recorded request (the harness is the Rollout record's `harness`, so assembly needs nothing
 *   from workflows/). Each fingerprint below was read from the harness's shipped code at the
 *   version named, and the ones marked "seen" were recorded from the real CLI against the proxy.
 * - **by rule** (assemble.ts): a call that continues no agent chain — it offers no tools while
 *   the rollout's other calls do, its conversation extends no earlier call's and no later call's
 *   extends it.
 */
import type { RequestView } from "./request-view.ts";

/** What an auxiliary call is for; `unchained` is the general rule's label (no fingerprint). */
export type AuxiliaryKind = "title" | "compaction" | "summary" | "classifier" | "quota" | "memory" | "unchained";

export type AuxiliaryFingerprint = {
  /** `<harness>.<what>`, the label in a trajectory's `kinds`. */
  name: string;
  kind: AuxiliaryKind;
  /**
   * `system`: the request's system text contains `text`. `last_user`: the request's last message
   * is a user message that starts with `text` (or is exactly `text` with `exact`).
   */
  where: "system" | "last_user";
  /** Plain ASCII without characters JSON escapes, so a byte search can rule a request out before it is parsed. */
  text: string;
  exact?: boolean;
  /** Where the text comes from in the harness (version, and whether a recorded call showed it). */
  source: string;
};

/** Fingerprints by harness name (Rollout.harness). */
export const AUXILIARY_FINGERPRINTS: Readonly<Record<string, readonly AuxiliaryFingerprint[]>> = {
  opencode: [
    {
      name: "opencode.title",
      kind: "title",
      where: "system",
      text: "You are a title generator. You output ONLY a thread title.",
      source: "opencode-ai 1.18.33, the title agent's prompt; seen: one per session, the first call, no tools",
    },
    {
      name: "opencode.compaction",
      kind: "compaction",
      where: "system",
      text: "You are a context summarization agent. You are given a conversation between a user and an agent.",
      source: "opencode-ai 1.18.33, the compaction agent's prompt",
    },
    {
      name: "opencode.summary",
      kind: "summary",
      where: "system",
      text: "Summarize what was done in this conversation. Write like a pull request description.",
      source: "opencode-ai 1.18.33, the summary agent's prompt",
    },
  ],
  pi: [
    {
      name: "pi.compaction",
      kind: "compaction",
      where: "system",
      text: "You are a context summarization assistant. Your task is to read a conversation between a user and an AI coding assistant",
      source:
        "@mariozechner/pi-coding-agent 0.73.1, SUMMARIZATION_SYSTEM_PROMPT (dist/core/compaction/utils.js), used by compaction, turn-prefix and branch summaries; seen: after the final answer when the context passes contextWindow - 16384",
    },
  ],
  "claude-code": [
    {
      name: "claude-code.title",
      kind: "title",
      where: "system",
      text: "Generate a concise, sentence-case title (3-7 words) that captures the main topic or goal of this coding session.",
      source: "@anthropic-ai/claude-code 2.1.197, querySource generate_session_title; seen: the first call, no tools, unless CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
    },
    {
      name: "claude-code.compaction",
      kind: "compaction",
      where: "system",
      text: "You are a helpful AI assistant tasked with summarizing conversations.",
      source: "@anthropic-ai/claude-code 2.1.197, querySource compact (it may keep the agent's tools, so the rule alone would miss it)",
    },
    {
      name: "claude-code.quota",
      kind: "quota",
      where: "last_user",
      text: "quota",
      exact: true,
      source: "@anthropic-ai/claude-code 2.1.197, querySource quota_check: max_tokens 1, one user message \"quota\"",
    },
  ],
  codex: [
    {
      name: "codex.compaction",
      kind: "compaction",
      where: "last_user",
      text: "You are performing a CONTEXT CHECKPOINT COMPACTION.",
      source:
        "codex-cli 0.171.0, local compaction; seen with model_auto_compact_token_limit: the agent's history and instructions, no tools, this user message last (it extends the agent's conversation, so the rule alone would miss it)",
    },
  ],
  "qwen-code": [
    {
      name: "qwen-code.title",
      kind: "title",
      where: "system",
      text: "Generate a concise, sentence-case title (3-7 words) that captures what this programming-assistant session is about.",
      source: "@qwen-code/qwen-code 0.15.10, TITLE_SYSTEM_PROMPT (tryGenerateSessionTitle)",
    },
    {
      name: "qwen-code.compaction",
      kind: "compaction",
      where: "system",
      text: "You are the component that summarizes internal chat history into a given structure.",
      source: "@qwen-code/qwen-code 0.15.10, getCompressionPrompt (tryCompressChat): the history with this system instruction",
    },
    {
      name: "qwen-code.next-speaker",
      kind: "classifier",
      where: "last_user",
      text: "Analyze *only* the content and structure of your immediately preceding response",
      source: "@qwen-code/qwen-code 0.15.10, checkNextSpeaker's CHECK_PROMPT after the history (off unless model.skipNextSpeakerCheck is false)",
    },
    {
      name: "qwen-code.memory-recall",
      kind: "memory",
      where: "system",
      text: "You are selecting memories that will be useful to an AI coding assistant as it processes a user's query.",
      source: "@qwen-code/qwen-code 0.15.10, SELECT_MEMORIES_SYSTEM_PROMPT (auto-memory-recall side query)",
    },
  ],
  // OpenClaw 2026.9.6 made no side call on the multi-step task; its rewrites are handled as forks.
  openclaw: [],
  // The built-in harness makes none.
  "forge-react": [],
};

const ALL = Object.values(AUXILIARY_FINGERPRINTS).flat();

/**
 * The fingerprints that apply to a rollout of `harness`: its own, or every known harness's for a
 * `command` harness or an unknown name (the program behind it is not known, and each text is
 * specific to the side call it marks).
 *
 * @example
 * fingerprintsFor("pi").map((f) => f.name); // ["pi.compaction"]
 */
export function fingerprintsFor(harness: string): readonly AuxiliaryFingerprint[] {
  return AUXILIARY_FINGERPRINTS[harness] ?? ALL;
}

const encoder = new TextEncoder();
const probes = new WeakMap<AuxiliaryFingerprint, Uint8Array>();

/** The bytes a request holding the fingerprint must contain (an exact text as a whole JSON string). */
function probeOf(f: AuxiliaryFingerprint): Uint8Array {
  let probe = probes.get(f);
  if (!probe) {
    probe = encoder.encode(f.exact ? JSON.stringify(f.text) : f.text);
    probes.set(f, probe);
  }
  return probe;
}

function holds(view: RequestView, f: AuxiliaryFingerprint): boolean {
  if (f.where === "system") return view.system.includes(f.text);
  const text = view.lastUser.trim();
  return f.exact ? text === f.text : text.startsWith(f.text);
}

/**
 * The fingerprint a request (`body`: its bytes) matches, if any. It is parsed (`view`) only when
 * its bytes contain a fingerprint's text, so the agent's own calls cost a byte search each.
 *
 * @example
 * const body = requestBodyOf(call, collected.content);
 * matchFingerprint(body, fingerprintsFor("opencode"), () => requestView(call, body))?.kind; // "title"
 */
export function matchFingerprint(body: Uint8Array, fingerprints: readonly AuxiliaryFingerprint[], view: () => RequestView | undefined): AuxiliaryFingerprint | undefined {
  if (fingerprints.length === 0 || body.length === 0) return undefined;
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  for (const f of fingerprints) {
    if (bytes.indexOf(probeOf(f)) < 0) continue;
    const v = view();
    if (v && holds(v, f)) return f;
  }
  return undefined;
}
