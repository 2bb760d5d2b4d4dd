#!/usr/bin/env bun
/**
 * Records real harness CLIs' chat requests for the rendering suite: each installed harness
 * (codex, claude-code, opencode, qwen-code, pi) runs a three-step task (write a file with the
 * shell, read it, answer) through the recording proxy against the policy simulator, and the
 * chat requests the proxy sent upstream (after translating Responses and Messages to Chat) are
 * written to tests/reference/fixtures/harness-<name>.json.
 *
 *   bun tests/reference/capture-harness-requests.ts [harness ...]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxy } from "../../proxy/index.ts";
import { createContentStore, readRecords, upstreamRequestOf } from "../../records/index.ts";
import type { PolicyScriptInput } from "../../schemas/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { harnessUnavailable } from "../../workflows/harnesses/index.ts";
import { runLocal } from "../../workflows/local/executor.ts";
import { taskFromSpec } from "../../workflows/tasks/index.ts";

const ADMIN = "capture-admin";
const CONTENT = 'Héllo, "OpenForge" — 你好!';
const script: PolicyScriptInput = {
  version: 1,
  failure_rate: 0,
  tasks: [
    {
      name: "notes",
      match: "notes.txt",
      steps: [
        { say: "I'll write the file first.", bash: `printf '%s\\n' '${CONTENT.replaceAll("'", "'\\''")}' > notes.txt` },
        { read: "notes.txt" },
        { finish: "Done: notes.txt holds the greeting." },
      ],
    },
  ],
};
const task = taskFromSpec(
  { id: "notes", instruction: `Create notes.txt containing exactly one line: ${CONTENT}. Then read it back to check it.`, files: {}, metadata: {}, test: "test -s notes.txt" },
  "capture",
);
const HARNESSES: { harness: string; options?: Record<string, unknown> }[] = [
  { harness: "codex" },
  { harness: "claude-code" },
  { harness: "opencode" },
  { harness: "qwen-code" },
  { harness: "pi", options: { api: "openai-completions" } },
];

const wanted = process.argv.slice(2);
const root = mkdtempSync(join(tmpdir(), "forge-capture-"));
const out = join(import.meta.dir, "fixtures");
mkdirSync(out, { recursive: true });
const sim = await startPolicySimulator({ seed: 5, script });
const dataDir = join(root, "data");
const proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir, adminToken: ADMIN, mode: "train", healthIntervalMs: 0 });
try {
  for (const { harness, options } of HARNESSES) {
    if (wanted.length > 0 && !wanted.includes(harness)) continue;
    const why = harnessUnavailable(harness);
    if (why) {
      console.warn(`capture: skipping ${harness}: ${why}`);
      continue;
    }
    const { outcomes } = await runLocal({
      run: `capture-${harness}`,
      experiment: "capture",
      tasks: [task],
      k: 1,
      harness,
      harnessOptions: options,
      model: "forge-sim/qwen3-sim",
      proxyUrl: proxy.url,
      adminToken: ADMIN,
      dataDir,
      parallelism: 1,
      timeoutSeconds: 180,
      quiet: true,
    });
    const outcome = outcomes[0]!;
    const requests: unknown[] = [];
    // Stored bodies refer to earlier calls of their rollout: read them in log order through one store.
    const store = createContentStore();
    for await (const { record } of readRecords(dataDir)) {
      if (record.kind.case !== "modelCall" || record.kind.value.rolloutId !== outcome.rollout_id) continue;
      const body = upstreamRequestOf(record.kind.value, store);
      if (Array.isArray(body.messages)) requests.push(body);
    }
    const file = join(out, `harness-${harness}.json`);
    writeFileSync(file, `${JSON.stringify({ harness, status: outcome.status, reward: outcome.reward, requests }, null, 1)}\n`);
    console.log(`capture: ${harness}: ${outcome.status}, reward ${outcome.reward}, ${requests.length} chat requests → ${file}`);
  }
} finally {
  await proxy.stop();
  await sim.stop();
  rmSync(root, { recursive: true, force: true });
}
