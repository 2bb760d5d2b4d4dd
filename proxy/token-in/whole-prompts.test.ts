import { describe, expect, test } from "bun:test";
import { loadModel } from "../../model/index.ts";
import { settingsKey } from "./keys.ts";
import { wholePrompt } from "./whole-prompts.ts";

const tools = [{ type: "function", function: { name: "ls", parameters: { type: "object", properties: { path: { type: "string" } } } } }];
const request = (extra: Record<string, unknown> = {}) => ({ tools, messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "List the files." }], ...extra });

describe("whole prompts kept by their messages and variables", () => {
  test("a chain's first prompt is the whole rendering, again for the same messages sent again, and its own for other variables", async () => {
    const model = await loadModel();
    const whole = (r: Record<string, unknown>) => model.tokenizer.encode(model.renderChat(r as never));
    const first = model.prepare(request() as never);
    const again = model.prepare(request() as never);
    const a = wholePrompt(model, first, settingsKey(first));
    const b = wholePrompt(model, again, settingsKey(again));
    expect([...a]).toEqual(whole(request()));
    expect([...b]).toEqual([...a]);
    // Each caller gets its own copy (a chain holds it).
    b[0] = 0;
    expect([...wholePrompt(model, again, settingsKey(again))]).toEqual(whole(request()));
    for (const other of [{ chat_template_kwargs: { enable_thinking: false } }, { add_generation_prompt: false }, { tools: [] }]) {
      const prepared = model.prepare(request(other) as never);
      expect([...wholePrompt(model, prepared, settingsKey(prepared))]).toEqual(whole(request(other)));
    }
    const edited = model.prepare({ ...request(), messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "List the files!" }] } as never);
    expect([...wholePrompt(model, edited, settingsKey(edited))]).toEqual(whole({ ...request(), messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "List the files!" }] }));
  });
});
