import { afterAll, describe, expect, test } from "bun:test";
import { BodyParts } from "../capture/append-fields.ts";
import { createUpstreamClient } from "./client.ts";
import { createUpstreamRouter, type UpstreamState } from "./router.ts";

/** An upstream that answers with what it received: the body's length, sha256, and its framing headers; /moved redirects to it. */
const echo = Bun.serve({
  port: 0,
  async fetch(req) {
    if (new URL(req.url).pathname === "/moved") {
      await req.arrayBuffer();
      return new Response(null, { status: 307, headers: { location: "/v1/chat/completions" } });
    }
    const body = new Uint8Array(await req.arrayBuffer());
    const sha = new Bun.CryptoHasher("sha256").update(body).digest("hex");
    return Response.json({ length: body.length, sha, contentLength: req.headers.get("content-length"), transferEncoding: req.headers.get("transfer-encoding") });
  },
});
afterAll(() => echo.stop(true));

const upstream = (url: string): UpstreamState => ({ url, healthy: true, lastError: "", lastCheckUnixMs: 0 });

/** A port nothing listens on (a server started and stopped). */
function refusedUrl(): string {
  const s = Bun.serve({ port: 0, fetch: () => new Response("") });
  const url = `http://127.0.0.1:${s.port}`;
  s.stop(true);
  return url;
}

describe("upstream client", () => {
  const router = createUpstreamRouter({ urls: [`http://127.0.0.1:${echo.port}`], healthIntervalMs: 0 });
  const client = createUpstreamClient({ router, firstByteTimeoutMs: 10_000 });
  const head = new Uint8Array(300_000).fill(0x61);
  head[0] = 0x7b;
  const members = new TextEncoder().encode(',"return_token_ids":true}');
  const joined = new Uint8Array(head.length + members.length);
  joined.set(head, 0);
  joined.set(members, head.length);
  const sha = new Bun.CryptoHasher("sha256").update(joined).digest("hex");

  test("a body of parts reaches the upstream as one Content-Length body with the parts' bytes in order", async () => {
    const answer = await client.send({ rolloutId: "ro-1", path: "/v1/chat/completions", method: "POST", body: new BodyParts([head, members]) });
    if (!("response" in answer)) throw answer.error;
    expect(await answer.response.json()).toEqual({ length: joined.length, sha, contentLength: String(joined.length), transferEncoding: null });
  });

  test("after a refused connection the next upstream gets the whole body of parts again", async () => {
    const own = [upstream(refusedUrl()), upstream(`http://127.0.0.1:${echo.port}`)];
    const answer = await client.send({ rolloutId: "ro-2", path: "/v1/chat/completions", method: "POST", body: new BodyParts([head, members]), own });
    if (!("response" in answer)) throw answer.error;
    expect(answer.attempts).toBe(2);
    expect(await answer.response.json()).toMatchObject({ length: joined.length, sha, contentLength: String(joined.length) });
  });

  test("an upstream that redirects gets the body of parts again at the redirect's target, as bytes would be", async () => {
    const answer = await client.send({ rolloutId: "ro-4", path: "/moved", method: "POST", body: new BodyParts([head, members]) });
    if (!("response" in answer)) throw answer.error;
    expect(answer.response.status).toBe(200);
    expect(await answer.response.json()).toMatchObject({ length: joined.length, sha });
  });

  test("bytes go as they are", async () => {
    const answer = await client.send({ rolloutId: "ro-3", path: "/v1/chat/completions", method: "POST", body: joined });
    if (!("response" in answer)) throw answer.error;
    expect(await answer.response.json()).toEqual({ length: joined.length, sha, contentLength: String(joined.length), transferEncoding: null });
  });
});
