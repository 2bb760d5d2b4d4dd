/** Request and sample shapes of the policy simulator (the OpenAI / vLLM wire format, loosely typed). */

export type SimContentPart = { type: string; text?: string; [extra: string]: unknown };

export interface SimMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool";
  content?: string | SimContentPart[] | null;
  tool_calls?: { id?: string; type?: string; function: { name: string; arguments: string | Record<string, unknown> } }[] | null;
  tool_call_id?: string;
  reasoning_content?: string | null;
  reasoning?: string | null;
  name?: string;
}

export interface SimTool {
  type: "function";
  function: { name: string; description?: string; parameters?: JsonSchema; strict?: boolean };
}

export type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  description?: string;
  default?: unknown;
  minimum?: number;
  enum?: unknown[];
  [extra: string]: unknown;
};

/** What the policy decided to say in one assistant turn, before tokenization. */
export interface PolicyTurn {
  /** Reasoning inside `<think>…</think>`; absent when the policy does not think. */
  reasoning?: string;
  content: string;
  toolCalls: { name: string; arguments: string }[];
}

/** One sampled completion, as the simulator produced it (the proxy's records must equal these). */
export interface SimSample {
  prompt_token_ids: number[];
  token_ids: number[];
  logprobs: number[];
  text: string;
  /** The proxy's `x-forge-rollout` header of the request (tests match samples to rollouts). */
  rollout?: string;
}
