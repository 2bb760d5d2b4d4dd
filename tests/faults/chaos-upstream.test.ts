/** The chaos upstream itself: each fault does what the fault tests rely on. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chaosMarker, startChaosUpstream, type ChaosUpstream } from "./chaos-upstream.ts";

let up: ChaosUpstream;
beforeAll(async () => {
  up = await startChaosUpstream({ chunks: 6, chunkDelayMs: 1 });
});
afterAll(() => up.stop());

const post = (content: string, stream: boolean) =>
  fetch(`${up.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", stream, return_token_ids: true, messages: [{ role: "user", content }] }),
  });

test("ok streams every chunk, token ids and [DONE]", async () => {
  const text = await (await post("hi", true)).text();
  expect(text).toContain('"prompt_token_ids"');
  expect(text.match(/"token_ids":\[\d+\]/g)?.length).toBe(6);
  expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
});

test("die destroys the socket after n chunks", async () => {
  const r = await post(chaosMarker("die", 2), true);
  await expect(r.text()).rejects.toThrow();
});

test("500 and 429 carry OpenAI error bodies; 429 has Retry-After", async () => {
  const a = await post(chaosMarker("500"), false);
  expect(a.status).toBe(500);
  const b = await post(chaosMarker("429"), false);
  expect(b.status).toBe(429);
  expect(b.headers.get("retry-after")).toBe("1");
  expect(((await b.json()) as any).error.type).toBe("rate_limit_error");
});

test("429then answers after n refusals of the same body", async () => {
  const body = `${chaosMarker("429then", 1)} once`;
  expect((await post(body, false)).status).toBe(429);
  expect((await post(body, false)).status).toBe(200);
});

test("malformed sends a data line that is not JSON; truncated cuts the JSON", async () => {
  expect(await (await post(chaosMarker("malformed", 1), true)).text()).toContain('"content": "x"\n\n');
  const t = await (await post(chaosMarker("truncated"), false)).text();
  expect(() => JSON.parse(t)).toThrow();
});

test("stall keeps the socket open after n chunks", async () => {
  const r = await post(chaosMarker("stall", 1), true);
  const reader = r.body!.getReader();
  await reader.read();
  const next = await Promise.race([reader.read().then(() => "data"), Bun.sleep(100).then(() => "stalled")]);
  // The role chunk and one content chunk may arrive together; after them nothing comes.
  const after = next === "data" ? await Promise.race([reader.read().then(() => "data"), Bun.sleep(150).then(() => "stalled")]) : next;
  expect(after).toBe("stalled");
  await reader.cancel();
});
