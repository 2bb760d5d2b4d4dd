/**
 * The floor of a reverse proxy written on Bun, for `bench/nginx.ts --floor`: what Bun.serve +
 * fetch cost before any recording proxy logic. Run as its own process:
 *
 *   bun bench/lib/bun-floor-proxy.ts UPSTREAM_URL pipe|touch
 *
 * `pipe` hands the upstream body to the Response untouched (Bun pipes it natively, no JS per
 * chunk); `touch` reads every upstream chunk in JS and writes it to a direct stream, which is the
 * least any proxy that must see each chunk (to capture token ids) can do. Prints {"url": ...}.
 */
const [upstream, mode] = process.argv.slice(2);
if (!upstream || (mode !== "pipe" && mode !== "touch")) {
  console.error("usage: bun bench/lib/bun-floor-proxy.ts UPSTREAM_URL pipe|touch");
  process.exit(2);
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    // The upstream is asked for what the recording proxy asks for in train mode, so it streams
    // the same (larger) chunks: token ids and logprobs.
    const body = { ...((await request.json()) as Record<string, unknown>), return_token_ids: true, logprobs: true };
    const answer = await fetch(upstream + new URL(request.url).pathname, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
    const headers = { "content-type": answer.headers.get("content-type") ?? "application/json" };
    if (mode === "pipe" || !answer.body) return new Response(answer.body, { status: answer.status, headers });
    const reader = answer.body.getReader();
    const touched = new ReadableStream({
      type: "direct",
      async pull(controller) {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          const written = controller.write(value);
          if (written instanceof Promise) await written;
        }
        controller.close();
      },
    });
    return new Response(touched, { status: answer.status, headers });
  },
});
console.log(JSON.stringify({ url: `http://127.0.0.1:${server.port}` }));
