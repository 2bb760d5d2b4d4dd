/**
 * A load generator process: `bun bench/lib/load-worker.ts CONFIG_JSON`, where CONFIG is
 * `{ targets: [{url, key}], concurrency, seconds, body }`. Streams chat calls round-robin over
 * the targets with `concurrency` calls in flight for `seconds`, then prints one JSON line
 * `{ calls, failed, seconds }`. Several of them together keep a sharded proxy busy without
 * the load generator's own thread being the limit.
 */
type Config = { targets: { url: string; key: string }[]; concurrency: number; seconds: number; body: string };

const config = JSON.parse(process.argv[2]!) as Config;
let calls = 0;
let failed = 0;
const started = performance.now();
const until = started + config.seconds * 1000;
await Promise.all(
  Array.from({ length: config.concurrency }, async (_, w) => {
    for (let i = w; performance.now() < until; i += config.concurrency) {
      const target = config.targets[i % config.targets.length]!;
      try {
        const response = await fetch(target.url, { method: "POST", headers: { authorization: `Bearer ${target.key}`, "content-type": "application/json" }, body: config.body });
        const text = await response.text();
        if (response.status === 200 && text.endsWith("data: [DONE]\n\n")) calls++;
        else failed++;
      } catch {
        failed++;
      }
    }
  }),
);
console.log(JSON.stringify({ calls, failed, seconds: (performance.now() - started) / 1000 }));
export {};
