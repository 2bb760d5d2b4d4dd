/** The request bodies the benchmarks send (bench/nginx.ts and bench/ab.ts measure the same calls). */
import { rgbPng } from "../../model/testing.ts";

/** `n` words of agent-ish text; the simulator echoes the prompt, so it sets the answer too. */
export function words(n: number): string {
  const vocab = ["the", "agent", "reads", "a", "file", "and", "runs", "tests", "before", "it", "edits", "code"];
  return Array.from({ length: n }, (_, i) => vocab[(i * 7 + (i >> 3)) % vocab.length]).join(" ");
}

/**
 * A Chat Completions body for the policy simulator, with an image part when `image` is given.
 *
 * @example
 * chatBody({ stream: true, prompt: PROMPT })
 */
export function chatBody(o: { stream: boolean; prompt: string; image?: string }): string {
  const content = o.image
    ? [{ type: "text", text: o.prompt }, { type: "image_url", image_url: { url: o.image } }]
    : o.prompt;
  return JSON.stringify({
    model: "forge-sim/qwen3-sim",
    stream: o.stream,
    ...(o.stream ? { stream_options: { include_usage: true } } : {}),
    max_tokens: 50,
    messages: [
      { role: "system", content: "You are a coding agent." },
      { role: "user", content },
    ],
  });
}

// The simulator echoes the prompt, so a prompt of >50 tokens gives 50 streamed tokens (max_tokens).
export const PROMPT = `Please summarise: ${words(300)}`;
/** A 200 KB prompt (real harnesses send 30–120 KB per call). */
export const PROMPT_200K = `Review this file:\n${words(33_000)}`.slice(0, 200_000);
/**
 * ~4 MB of base64: a screenshot as computer-use harnesses send it. A real PNG (the policy
 * simulator sizes images as Qwen-VL's processor does, and refuses bytes that are no image):
 * 1280×800 pixels stored uncompressed, padded to 3 MB.
 */
export const SCREENSHOT = `data:image/png;base64,${rgbPng(1280, 800, Buffer.alloc(1280 * 800 * 3, 7), { stored: true, size: 3 * 1024 * 1024 }).toString("base64")}`;
