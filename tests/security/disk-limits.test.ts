/**
 * Attack 3 of issue 35: a harness filling the disk. It wrote 200 MB into its workspace and
 * 200 MB into /tmp, and the workspace stayed in the data directory. Now (workflows/local/
 * disk-limit.ts) the sandbox's /tmp is a tmpfs of `spec.rollouts.resources.tmp` bytes, the
 * workspace and HOME are held to `resources.disk`, and a rollout past it ends `failed` with a
 * "disk limit" error and the metric `disk_limit_exceeded`, what it wrote removed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";
import { readRecords } from "../../records/index.ts";
import { quantityBytes } from "../../workflows/local/disk-limit.ts";
import { runLocal } from "../../workflows/local/executor.ts";
import { findBwrap } from "../../workflows/local/sandbox.ts";
import { taskFromSpec } from "../../workflows/tasks/index.ts";
import { RolloutStatus } from "../../schemas/index.ts";

let root: string;
let harness: ProxyHarness;
let proxy: ProxyHarness["proxy"];
let ADMIN: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "forge-disk-limits-"));
  harness = await startProxyHarness({ sim: { seed: 1 }, proxy: { mode: "train" }, dataDir: join(root, "proxy-data") });
  proxy = harness.proxy;
  ADMIN = harness.adminToken;
});
afterAll(async () => {
  await harness?.close();
  rmSync(root, { recursive: true, force: true });
});

const run = (name: string, tasks: ReturnType<typeof taskFromSpec>[], sandbox: "bwrap" | "none") =>
  runLocal({
    run: name,
    experiment: "disk-limits",
    tasks,
    k: 1,
    harness: "command",
    harnessCommand: ["bash", "-c", "{prompt}"],
    model: "m",
    proxyUrl: proxy.url,
    adminToken: ADMIN,
    dataDir: join(root, name),
    parallelism: 2,
    timeoutSeconds: 120,
    quiet: true,
    sandbox,
    allowRootUnsandboxed: true,
    diskLimits: { disk: "50Mi", tmp: "20Mi" },
  });

async function resultsOf(prefix: string) {
  const out = new Map<string, { status: RolloutStatus; error: string; metrics: Record<string, number> }>();
  for await (const { record } of readRecords(join(root, "proxy-data"))) {
    if (record.kind.case === "rolloutResult" && record.kind.value.rolloutId.startsWith(prefix)) out.set(record.kind.value.rolloutId, record.kind.value);
  }
  return out;
}

const FILL_WORKSPACE = "head -c 200000000 /dev/zero > big.bin; echo wrote; sleep 30";
const MODEST = "head -c 10000000 /dev/urandom > ok.bin && echo fine > answer.txt";

describe("disk limits", () => {
  test.skipIf(!findBwrap())("sandboxed: /tmp is capped (ENOSPC, gone afterwards); 200 MB in the workspace ends the rollout failed with a disk-limit error; a modest rollout beside it is ok", async () => {
    const tasks = [
      taskFromSpec({ id: "fill-workspace", instruction: FILL_WORKSPACE, files: {}, metadata: {}, test: "exit 0" }, "t"),
      // /tmp and /dev/shm are tmpfs of 20 MiB each; /, /dev and /etc take no writes.
      taskFromSpec({ id: "fill-tmp", instruction: "head -c 30000000 /dev/zero > /tmp/big.bin; echo tmp-exit=$?; ls -l /tmp/big.bin; head -c 30000000 /dev/zero > /dev/shm/big.bin; echo shm-exit=$?; for p in /big.bin /dev/big.bin /etc/big.bin; do echo x > $p || echo refused $p; done", files: {}, metadata: {}, test: "exit 0" }, "t"),
      taskFromSpec({ id: "modest", instruction: MODEST, files: {}, metadata: {}, test: "test -s ok.bin && grep -q fine answer.txt" }, "t"),
    ];
    const { outcomes } = await run("sandboxed", tasks, "bwrap");
    const byTask = Object.fromEntries(outcomes.map((outcome) => [outcome.task_id, outcome]));

    const fill = byTask["fill-workspace"]!;
    expect(fill).toMatchObject({ status: "failed", reward: 0, disk_limit_exceeded: true });
    expect(fill.error).toStartWith("disk limit: the workspace and HOME held ");
    expect(fill.error).toContain(`over spec.rollouts.resources.disk (${quantityBytes("50Mi")} bytes)`);
    // Killed at the limit while it ran, not found over it after its 30 s sleep.
    expect(fill.error).toContain("the harness was killed");
    expect(fill.harness_exit_code).toBeNull();
    // What it wrote is gone; its logs and result stay.
    expect(existsSync(join(fill.dir, "workspace"))).toBe(false);
    expect(existsSync(join(fill.dir, "result.json"))).toBe(true);

    const tmp = byTask["fill-tmp"]!;
    const out = readFileSync(join(tmp.dir, "logs", "harness.stdout"), "utf8") + readFileSync(join(tmp.dir, "logs", "harness.stderr"), "utf8");
    expect(out).toContain("No space left on device");
    expect(out).toContain("tmp-exit=1");
    expect(out).toContain("shm-exit=1");
    // bwrap's own root and /dev, tmpfs without a limit, are read-only.
    for (const path of ["/big.bin", "/dev/big.bin", "/etc/big.bin"]) expect(out).toContain(`refused ${path}`);
    expect(out).toMatch(new RegExp(` ${quantityBytes("20Mi")} .* /tmp/big.bin`));
    expect(tmp.status).toBe("ok");
    // /tmp was the sandbox's: nothing of it is in the data directory.
    const kept = readdirSync(tmp.dir).sort();
    expect(kept).toEqual(["home", "logs", "result.json", "tests", "verifier", "workspace"]);

    expect(byTask.modest).toMatchObject({ status: "ok", reward: 1 });

    // The proxy's log holds the failed result with the reason and the metric.
    const results = await resultsOf("sandboxed.");
    const recorded = results.get(fill.rollout_id)!;
    expect(recorded.status).toBe(RolloutStatus.FAILED);
    expect(recorded.error).toStartWith("disk limit:");
    expect(recorded.metrics.disk_limit_exceeded).toBe(1);
    expect(results.get(byTask.modest!.rollout_id)!.status).toBe(RolloutStatus.OK);
  }, 120_000);

  test("unsandboxed the workspace limit holds too", async () => {
    const tasks = [taskFromSpec({ id: "fill-workspace", instruction: FILL_WORKSPACE, files: {}, metadata: {}, test: "exit 0" }, "t")];
    const { outcomes } = await run("unsandboxed", tasks, "none");
    expect(outcomes[0]).toMatchObject({ status: "failed", reward: 0, disk_limit_exceeded: true });
    expect(outcomes[0]!.error).toContain("the harness was killed");
    expect(existsSync(join(outcomes[0]!.dir, "workspace"))).toBe(false);
  }, 120_000);
});
