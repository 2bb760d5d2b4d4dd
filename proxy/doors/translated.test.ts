import { afterAll, beforeAll, expect, test } from "bun:test";
import Anthropic from "@anthropic-ai/sdk";
import { Protocol, TokenStatus } from "../../schemas/index.ts";
import { anthropicFrontDoor } from "./anthropic/door.ts";
import { startProxyHarness, type ProxyHarness } from "../testing.ts";
import { DEFAULT_FRONT_DOORS } from "./index.ts";
import { translatedFrontDoor } from "./translated.ts";

// The plug-in path: a translated front door added through options, driven by the Anthropic SDK.
const messages = translatedFrontDoor({ name: "anthropic_messages", protocol: Protocol.ANTHROPIC_MESSAGES, path: "/v1/messages", translate: (b) => anthropicFrontDoor(b) });
let h: ProxyHarness;
beforeAll(async () => {
  h = await startProxyHarness({ proxy: { frontDoors: [...DEFAULT_FRONT_DOORS, messages] } });
});
afterAll(async () => {
  await h.close();
});

test("a translated front door records the Chat token ids, streaming and not", async () => {
  const r = await h.register();
  const client = new Anthropic({ baseURL: r.openai_base_url.replace(/\/v1$/, ""), apiKey: r.api_key, maxRetries: 0 });
  const answer = await client.messages.create({ model: "qwen3", max_tokens: 64, messages: [{ role: "user", content: "hello" }] });
  // Qwen3 opens with a think block (empty here): the door answers it as a thinking block.
  expect(answer.content.map((b) => b.type)).toEqual(["thinking", "text"]);
  const s1 = h.sims[0]!.samples.at(-1)!;
  let text = "";
  for await (const event of client.messages.stream({ model: "qwen3", max_tokens: 64, messages: [{ role: "user", content: "hello again" }] })) {
    if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text;
  }
  const s2 = h.sims[0]!.samples.at(-1)!;
  expect(text).toBe(s2.text.replace("<|im_end|>", "").split("</think>")[1]!);
  const calls = await h.calls(r.rollout_id);
  expect(calls.map((c) => c.protocol)).toEqual([Protocol.ANTHROPIC_MESSAGES, Protocol.ANTHROPIC_MESSAGES]);
  expect(calls.map((c) => c.tokenStatus)).toEqual([TokenStatus.COMPLETE, TokenStatus.COMPLETE]);
  expect(calls[0]!.completionTokenIds).toEqual(s1.token_ids);
  expect(calls[1]!.completionTokenIds).toEqual(s2.token_ids);
  expect(new TextDecoder().decode(calls[1]!.responseBody)).toContain("event: message_stop");
});
