/**
 * The proxy's Prometheus metrics, written in the text exposition format (0.0.4) by hand:
 * a handful of counters, gauges and two histograms do not need a client library.
 */

type Labels = Record<string, string>;

const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export interface ProxyMetrics {
  callFinished(labels: { protocol: string; status: string; http_status: number }, seconds: number, ttftSeconds: number | undefined): void;
  tokens(kind: "prompt" | "completion", n: number): void;
  tokenMissing(protocol: string): void;
  recorderError(): void;
  overloaded(): void;
  inFlight(delta: number): void;
  setPaused(paused: boolean): void;
  setWaiting(n: number): void;
  render(): string;
}

/**
 * Fresh metrics.
 *
 * @example
 * const m = createProxyMetrics();
 * m.callFinished({ protocol: "chat", status: "OK", http_status: 200 }, 0.2, 0.05);
 * m.render().includes("forge_proxy_calls_total") // true
 */
export function createProxyMetrics(): ProxyMetrics {
  const calls = new Map<string, number>();
  const errors = new Map<string, number>();
  const missing = new Map<string, number>();
  const tokenCounts = { prompt: 0, completion: 0 };
  let recorderErrors = 0;
  let overloads = 0;
  let inFlight = 0;
  let paused = 0;
  let waiting = 0;
  const latency = histogram();
  const ttft = histogram();
  const callKeys = new Map<string, string>();

  return {
    callFinished(labels, seconds, ttftSeconds) {
      // The label text of a (protocol, status, code), escaped once, not on every call.
      const raw = `${labels.protocol}\u0000${labels.status}\u0000${labels.http_status}`;
      let key = callKeys.get(raw);
      if (key === undefined) {
        key = labelText({ protocol: labels.protocol, status: labels.status, code: String(labels.http_status) });
        callKeys.set(raw, key);
      }
      calls.set(key, (calls.get(key) ?? 0) + 1);
      if (labels.status !== "OK") {
        const ek = labelText({ protocol: labels.protocol, status: labels.status });
        errors.set(ek, (errors.get(ek) ?? 0) + 1);
      }
      latency.observe(labels.protocol, seconds);
      if (ttftSeconds !== undefined) ttft.observe(labels.protocol, ttftSeconds);
    },
    tokens(kind, n) {
      tokenCounts[kind] += n;
    },
    tokenMissing(protocol) {
      const key = labelText({ protocol });
      missing.set(key, (missing.get(key) ?? 0) + 1);
    },
    recorderError() {
      recorderErrors++;
    },
    overloaded() {
      overloads++;
    },
    inFlight(delta) {
      inFlight += delta;
    },
    setPaused(p) {
      paused = p ? 1 : 0;
    },
    setWaiting(n) {
      waiting = n;
    },
    render() {
      const out: string[] = [];
      const family = (name: string, type: string, help: string, series: [string, number][]) => {
        out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
        for (const [labels, value] of series) out.push(`${name}${labels} ${value}`);
      };
      family("forge_proxy_calls_total", "counter", "Model calls finished, by protocol, call status and HTTP status.", [...calls]);
      family("forge_proxy_errors_total", "counter", "Model calls that did not end OK, by protocol and call status.", [...errors]);
      family("forge_proxy_prompt_tokens_total", "counter", "Prompt tokens of recorded calls (upstream usage).", [["", tokenCounts.prompt]]);
      family("forge_proxy_completion_tokens_total", "counter", "Completion tokens of recorded calls (upstream usage).", [["", tokenCounts.completion]]);
      family("forge_proxy_token_missing_total", "counter", "Train-mode calls whose upstream returned no token ids (token_status=MISSING).", [...missing]);
      family("forge_proxy_recorder_errors_total", "counter", "Appends to the segment log that failed.", [["", recorderErrors]]);
      family("forge_proxy_overloaded_total", "counter", "Model calls refused with 429 because --max-concurrent-calls were in flight.", [["", overloads]]);
      family("forge_proxy_in_flight", "gauge", "Model calls in flight.", [["", inFlight]]);
      family("forge_proxy_paused", "gauge", "1 while the proxy is paused for a weight sync.", [["", paused]]);
      family("forge_proxy_paused_waiting", "gauge", "Calls held by a pause.", [["", waiting]]);
      latency.render(out, "forge_proxy_call_duration_seconds", "Model call latency seen by the proxy (request to last byte).");
      ttft.render(out, "forge_proxy_ttft_seconds", "Time to the upstream's first byte.");
      return out.join("\n") + "\n";
    },
  };
}

function histogram() {
  const series = new Map<string, { buckets: number[]; sum: number; count: number }>();
  return {
    observe(protocol: string, value: number) {
      let s = series.get(protocol);
      if (!s) series.set(protocol, (s = { buckets: LATENCY_BUCKETS_S.map(() => 0), sum: 0, count: 0 }));
      for (let i = 0; i < LATENCY_BUCKETS_S.length; i++) if (value <= LATENCY_BUCKETS_S[i]!) s.buckets[i]!++;
      s.sum += value;
      s.count++;
    },
    render(out: string[], name: string, help: string) {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} histogram`);
      for (const [protocol, s] of series) {
        LATENCY_BUCKETS_S.forEach((le, i) => out.push(`${name}_bucket${labelText({ protocol, le: String(le) })} ${s.buckets[i]}`));
        out.push(`${name}_bucket${labelText({ protocol, le: "+Inf" })} ${s.count}`);
        out.push(`${name}_sum${labelText({ protocol })} ${s.sum}`);
        out.push(`${name}_count${labelText({ protocol })} ${s.count}`);
      }
    },
  };
}

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`);
  return `{${parts.join(",")}}`;
}
