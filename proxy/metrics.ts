/**
 * The proxy's Prometheus metrics, written in the text exposition format (0.0.4) by hand:
 * a handful of counters, gauges and two histograms do not need a client library.
 *
 * Per-call series carry the scope a researcher compares by: the rollout's `experiment` and
 * `iteration` and the `policy_version` that served the call (docs/metrics.md, "Prometheus").
 * Their label text is built once per rollout and per (scope, protocol, status, code), never per
 * call. The process metrics (CPU, memory, open files, start time) are read when scraped.
 */
import { readdirSync } from "node:fs";

type Labels = Record<string, string>;

/** What a call's series are labelled by: its rollout (experiment, iteration) and the serving policy version. */
export type CallScope = { rollout: { experiment: string; iteration: number }; policyVersion: number };

const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export interface ProxyMetrics {
  callFinished(labels: { protocol: string; status: string; http_status: number }, seconds: number, ttftSeconds: number | undefined, scope?: CallScope): void;
  tokens(kind: "prompt" | "completion", n: number, scope?: CallScope): void;
  tokenMissing(protocol: string, scope?: CallScope): void;
  recorderError(): void;
  overloaded(): void;
  inFlight(delta: number): void;
  setPaused(paused: boolean): void;
  setWaiting(n: number): void;
  /** The policy version the proxy serves now (forge_proxy_policy_version). */
  setPolicyVersion(version: number): void;
  render(): string;
}

/**
 * Fresh metrics.
 *
 * @example
 * const m = createProxyMetrics();
 * m.callFinished({ protocol: "chat", status: "OK", http_status: 200 }, 0.2, 0.05, { rollout: { experiment: "q", iteration: 0 }, policyVersion: 0 });
 * m.render().includes('forge_proxy_calls_total{experiment="q",iteration="0",policy_version="0",protocol="chat",status="OK",code="200"} 1') // true
 */
export function createProxyMetrics(): ProxyMetrics {
  const calls = new Map<string, number>();
  const errors = new Map<string, number>();
  const missing = new Map<string, number>();
  const promptTokens = new Map<string, number>();
  const completionTokens = new Map<string, number>();
  let recorderErrors = 0;
  let overloads = 0;
  let inFlight = 0;
  let paused = 0;
  let waiting = 0;
  let policyVersion = 0;
  const latency = histogram();
  const ttft = histogram();
  // Label text, escaped once: per rollout object (experiment and iteration) and policy version,
  // then per (scope, protocol, status, code) and per (scope, protocol), looked up by the short
  // label values in the rollout's own map (not by the whole label text, hashed per call).
  type ScopeKeys = { version: number; text: string; keys: Map<string, string> };
  const scopes = new WeakMap<object, ScopeKeys>();
  const unscoped: ScopeKeys = { version: -1, text: 'experiment="",iteration="",policy_version=""', keys: new Map() };
  const scopeKeys = (scope: CallScope | undefined): ScopeKeys => {
    if (!scope) return unscoped;
    let cached = scopes.get(scope.rollout);
    if (cached === undefined || cached.version !== scope.policyVersion) {
      const rolloutText = labelPairs({ experiment: scope.rollout.experiment, iteration: String(scope.rollout.iteration) });
      cached = { version: scope.policyVersion, text: `${rolloutText},policy_version="${scope.policyVersion}"`, keys: new Map() };
      scopes.set(scope.rollout, cached);
    }
    return cached;
  };
  const keyOf = (scope: ScopeKeys, extra: Labels): string => {
    const raw = Object.values(extra).join("\u0000");
    let key = scope.keys.get(raw);
    if (key === undefined) {
      key = Object.keys(extra).length ? `{${scope.text},${labelPairs(extra)}}` : `{${scope.text}}`;
      scope.keys.set(raw, key);
    }
    return key;
  };
  const add = (map: Map<string, number>, key: string, n: number) => map.set(key, (map.get(key) ?? 0) + n);

  return {
    callFinished(labels, seconds, ttftSeconds, scope) {
      const text = scopeKeys(scope);
      add(calls, keyOf(text, { protocol: labels.protocol, status: labels.status, code: String(labels.http_status) }), 1);
      if (labels.status !== "OK") add(errors, keyOf(text, { protocol: labels.protocol, status: labels.status }), 1);
      const byProtocol = keyOf(text, { protocol: labels.protocol });
      latency.observe(byProtocol, seconds);
      if (ttftSeconds !== undefined) ttft.observe(byProtocol, ttftSeconds);
    },
    tokens(kind, n, scope) {
      add(kind === "prompt" ? promptTokens : completionTokens, keyOf(scopeKeys(scope), {}), n);
    },
    tokenMissing(protocol, scope) {
      add(missing, keyOf(scopeKeys(scope), { protocol }), 1);
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
    setPolicyVersion(version) {
      policyVersion = version;
    },
    render() {
      const out: string[] = [];
      const family = (name: string, type: string, help: string, series: [string, number][]) => {
        out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
        for (const [labels, value] of series) out.push(`${name}${labels} ${value}`);
      };
      family("forge_proxy_calls_total", "counter", "Model calls finished, by protocol, call status and HTTP status.", [...calls]);
      family("forge_proxy_errors_total", "counter", "Model calls that did not end OK, by protocol and call status.", [...errors]);
      family("forge_proxy_prompt_tokens_total", "counter", "Prompt tokens of recorded calls (upstream usage).", [...promptTokens]);
      family("forge_proxy_completion_tokens_total", "counter", "Completion tokens of recorded calls (upstream usage).", [...completionTokens]);
      family("forge_proxy_token_missing_total", "counter", "Train-mode calls whose upstream returned no token ids (token_status=MISSING).", [...missing]);
      family("forge_proxy_recorder_errors_total", "counter", "Appends to the segment log that failed.", [["", recorderErrors]]);
      family("forge_proxy_overloaded_total", "counter", "Model calls refused with 429 because --max-concurrent-calls were in flight.", [["", overloads]]);
      family("forge_proxy_in_flight", "gauge", "Model calls in flight.", [["", inFlight]]);
      family("forge_proxy_paused", "gauge", "1 while the proxy is paused for a weight sync.", [["", paused]]);
      family("forge_proxy_paused_waiting", "gauge", "Calls held by a pause.", [["", waiting]]);
      family("forge_proxy_policy_version", "gauge", "The policy version the proxy serves now (raised by each weight sync).", [["", policyVersion]]);
      latency.render(out, "forge_proxy_call_duration_seconds", "Model call latency seen by the proxy (request to last byte).");
      ttft.render(out, "forge_proxy_ttft_seconds", "Time to the upstream's first byte.");
      renderProcess(family);
      return out.join("\n") + "\n";
    },
  };
}

/** A histogram per label set; `key` is the set's label text, braces included. */
function histogram() {
  const series = new Map<string, { buckets: number[]; sum: number; count: number }>();
  return {
    observe(key: string, value: number) {
      let s = series.get(key);
      if (!s) series.set(key, (s = { buckets: LATENCY_BUCKETS_S.map(() => 0), sum: 0, count: 0 }));
      for (let i = 0; i < LATENCY_BUCKETS_S.length; i++) if (value <= LATENCY_BUCKETS_S[i]!) s.buckets[i]!++;
      s.sum += value;
      s.count++;
    },
    render(out: string[], name: string, help: string) {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} histogram`);
      for (const [key, s] of series) {
        const inner = key.slice(1, -1);
        LATENCY_BUCKETS_S.forEach((le, i) => out.push(`${name}_bucket{${inner},le="${le}"} ${s.buckets[i]}`));
        out.push(`${name}_bucket{${inner},le="+Inf"} ${s.count}`);
        out.push(`${name}_sum${key} ${s.sum}`);
        out.push(`${name}_count${key} ${s.count}`);
      }
    },
  };
}

type Family = (name: string, type: string, help: string, series: [string, number][]) => void;

const startTimeSeconds = Date.now() / 1000 - process.uptime();

/**
 * The process metrics Prometheus client libraries export under these names (process_*), from
 * Bun's process.cpuUsage / memoryUsage; open file descriptors from /proc where there is one.
 */
function renderProcess(family: Family): void {
  const cpu = process.cpuUsage();
  const memory = process.memoryUsage();
  family("process_cpu_user_seconds_total", "counter", "User CPU time spent by the proxy process in seconds.", [["", cpu.user / 1e6]]);
  family("process_cpu_system_seconds_total", "counter", "System CPU time spent by the proxy process in seconds.", [["", cpu.system / 1e6]]);
  family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", [["", (cpu.user + cpu.system) / 1e6]]);
  family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", [["", memory.rss]]);
  family("process_heap_bytes", "gauge", "JavaScript heap in use in bytes.", [["", memory.heapUsed]]);
  family("process_heap_total_bytes", "gauge", "JavaScript heap reserved in bytes.", [["", memory.heapTotal]]);
  family("process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch in seconds.", [["", Math.round(startTimeSeconds)]]);
  const fds = openFds();
  if (fds !== undefined) family("process_open_fds", "gauge", "Number of open file descriptors.", [["", fds]]);
}

function openFds(): number | undefined {
  try {
    return readdirSync("/proc/self/fd").length;
  } catch {
    return undefined;
  }
}

function escapeValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** `k1="v1",k2="v2"`, values escaped as the exposition format wants. */
function labelPairs(labels: Labels): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}="${escapeValue(v)}"`)
    .join(",");
}
