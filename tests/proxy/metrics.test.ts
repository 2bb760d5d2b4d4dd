/**
 * The proxy's /metrics (docs/metrics.md, "Prometheus"): per-call series labelled with the
 * rollout's experiment and iteration and the policy version that served the call, process
 * metrics, and text Prometheus can parse: every sample line is `name{labels} value` with a
 * declared family, label values escaped.
 */
import { expect, test } from "bun:test";
import { startProxyHarness } from "../../proxy/testing.ts";
import { createProxyMetrics } from "../../proxy/metrics.ts";

/** The exposition format's sample line: a metric name, optional labels with quoted values, a number. */
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*)?\})? (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$/;

function parse(text: string) {
  const families = new Map<string, string>();
  const samples: { name: string; labels: string; value: number }[] = [];
  for (const line of text.split("\n").filter(Boolean)) {
    const type = /^# TYPE (\S+) (counter|gauge|histogram)$/.exec(line);
    if (type) {
      expect(families.has(type[1]!)).toBe(false);
      families.set(type[1]!, type[2]!);
      continue;
    }
    if (line.startsWith("# HELP ")) continue;
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not a sample line: ${line}`);
    const family = sample[1]!.replace(/_(bucket|sum|count)$/, "");
    expect(families.has(sample[1]!) || families.get(family) === "histogram").toBe(true);
    samples.push({ name: sample[1]!, labels: sample[3] ?? "", value: Number(sample[4]) });
  }
  return { families, samples };
}

test("calls are counted per experiment, iteration and policy version; process metrics; the text parses", async () => {
  const h = await startProxyHarness();
  try {
    const first = await h.register({ experiment: "alpha", iteration: 2 });
    await h.client(first).chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });
    await h.client(first).chat.completions.create({ model: "m", messages: [{ role: "user", content: "again" }] });
    // A weight sync: the proxy serves version 1 from here on.
    expect((await h.control("/control/pause", {})).status).toBe(200);
    expect((await h.control("/control/resume", { policy_version: 1 })).status).toBe(200);
    const second = await h.register({ experiment: 'be"ta\\x', iteration: 3 });
    await h.client(second).chat.completions.create({ model: "m", messages: [{ role: "user", content: "hello" }] });

    const text = await (await fetch(`${h.proxy.url}/metrics`)).text();
    const { families, samples } = parse(text);
    const value = (name: string, labels: string) => samples.find((s) => s.name === name && s.labels === labels)?.value;
    const alpha = 'experiment="alpha",iteration="2",policy_version="0"';
    const beta = 'experiment="be\\"ta\\\\x",iteration="3",policy_version="1"';
    expect(value("forge_proxy_calls_total", `${alpha},protocol="chat",status="OK",code="200"`)).toBe(2);
    expect(value("forge_proxy_calls_total", `${beta},protocol="chat",status="OK",code="200"`)).toBe(1);
    expect(value("forge_proxy_call_duration_seconds_count", `${alpha},protocol="chat"`)).toBe(2);
    expect(value("forge_proxy_call_duration_seconds_bucket", `${beta},protocol="chat",le="+Inf"`)).toBe(1);
    expect(value("forge_proxy_prompt_tokens_total", alpha)).toBeGreaterThan(0);
    expect(value("forge_proxy_completion_tokens_total", beta)).toBeGreaterThan(0);
    expect(value("forge_proxy_policy_version", "")).toBe(1);

    for (const name of ["process_cpu_seconds_total", "process_cpu_user_seconds_total", "process_resident_memory_bytes", "process_heap_bytes", "process_start_time_seconds", "process_open_fds"]) {
      expect(families.has(name)).toBe(true);
      expect(value(name, "")).toBeGreaterThan(0);
    }
    expect(value("process_start_time_seconds", "")!).toBeLessThanOrEqual(Date.now() / 1000);
    // The harness runs the proxy in this process: its CPU time is at least what the test used so far.
    expect(value("process_cpu_seconds_total", "")!).toBeGreaterThan(0);
  } finally {
    await h.close();
  }
}, 60_000);

test("label text is cached per rollout: the same rollout object costs one escape, a new version its own series", () => {
  const metrics = createProxyMetrics();
  const rollout = { experiment: "e", iteration: 1 };
  for (let i = 0; i < 3; i++) metrics.callFinished({ protocol: "chat", status: "OK", http_status: 200 }, 0.01, undefined, { rollout, policyVersion: 0 });
  metrics.callFinished({ protocol: "chat", status: "UPSTREAM_ERROR", http_status: 502 }, 0.01, undefined, { rollout, policyVersion: 1 });
  const text = metrics.render();
  expect(text).toContain('forge_proxy_calls_total{experiment="e",iteration="1",policy_version="0",protocol="chat",status="OK",code="200"} 3');
  expect(text).toContain('forge_proxy_errors_total{experiment="e",iteration="1",policy_version="1",protocol="chat",status="UPSTREAM_ERROR"} 1');
  parse(text);
});
