import { describe, expect, test } from "bun:test";
import { DEFAULT_CONTEXT_WINDOW, piAdapter } from "./pi.ts";
import type { HarnessContext } from "./types.ts";

const ctx: HarnessContext = {
  baseUrlOpenAI: "http://127.0.0.1:1/r/x/v1",
  baseUrlAnthropic: "http://127.0.0.1:1/r/x",
  apiKey: "k",
  model: "qwen3",
  workspace: "/ws",
  homeDir: "/h",
  prompt: "do it",
};

const windowOf = (c: HarnessContext): number => JSON.parse(piAdapter(c).files[0]!.content).providers.forge.models[0].contextWindow;

describe("pi's context window (it compacts past contextWindow - 16384)", () => {
  test("the experiment's option first, then the window the server reports, then 32768", () => {
    expect(windowOf({ ...ctx, contextWindow: 131072, options: { contextWindow: 65536 } })).toBe(65536);
    expect(windowOf({ ...ctx, contextWindow: 131072 })).toBe(131072);
    expect(windowOf(ctx)).toBe(DEFAULT_CONTEXT_WINDOW);
    expect(DEFAULT_CONTEXT_WINDOW).toBe(32768);
  });

  test("a context window that is not a number is refused, naming the option", () => {
    expect(() => piAdapter({ ...ctx, options: { contextWindow: "128k" } })).toThrow("spec.harness.options.contextWindow: expected a number");
  });
});
