import { describe, expect, test } from "bun:test";
import { createUpstreamRouter, normalizeUpstream } from "./router.ts";

describe("upstream router", () => {
  test("normalizes base URLs and refuses non-URLs", () => {
    expect(normalizeUpstream("http://127.0.0.1:8000/v1/")).toBe("http://127.0.0.1:8000");
    expect(normalizeUpstream("https://api.example.com/openai/v1")).toBe("https://api.example.com/openai");
    expect(() => normalizeUpstream("localhost")).toThrow(/not a URL/);
    expect(() => createUpstreamRouter({ urls: [] })).toThrow(/--upstream/);
  });

  test("rendezvous ranking is sticky, spreads rollouts, and moves only a failed upstream's rollouts", () => {
    const urls = ["http://a:1", "http://b:1", "http://c:1"];
    const router = createUpstreamRouter({ urls, healthIntervalMs: 0 });
    const first = (id: string) => router.rank(id)[0]!.url;
    const ids = Array.from({ length: 300 }, (_, i) => `ro-${i}`);
    const before = new Map(ids.map((id) => [id, first(id)]));
    for (const id of ids) expect(first(id)).toBe(before.get(id)!);
    const counts = new Map<string, number>();
    for (const u of before.values()) counts.set(u, (counts.get(u) ?? 0) + 1);
    for (const u of urls) expect(counts.get(u)!).toBeGreaterThan(60);
    router.markDown("http://b:1", "test");
    for (const id of ids) {
      if (before.get(id) !== "http://b:1") expect(first(id)).toBe(before.get(id)!);
      else expect(first(id)).not.toBe("http://b:1");
    }
  });

  test("health checks take an upstream out and put it back", async () => {
    let healthy = false;
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("", { status: healthy ? 200 : 503 }) });
    const router = createUpstreamRouter({ urls: [`http://127.0.0.1:${server.port}/v1`], healthIntervalMs: 0 });
    try {
      await router.checkAll();
      expect(router.upstreams[0]!.healthy).toBe(false);
      healthy = true;
      await router.checkAll();
      expect(router.upstreams[0]!.healthy).toBe(true);
    } finally {
      router.stop();
      await server.stop(true);
    }
  });
});
