/**
 * One flipped byte in the log, as bit rot or a bad disk leaves it, costs exactly the frame it
 * lands in: in an older segment (800 recorded calls), in a registration record (200 rollouts),
 * and in the newest segment when the proxy restarts on it. The damaged bytes are copied to
 * log/quarantine/, and `forge export` fails on damage unless told --skip-corrupt.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { listSegments, readRecords, type LoggedRecord } from "../../records/index.ts";
import { ADMIN, startProxyUnderTest } from "./proxy-under-test.ts";

const ROOT = resolve(import.meta.dir, "..", "..");
const ROLLOUTS = 200;
const CALLS_PER_ROLLOUT = 4;

let pristine: string; // a data dir written by two proxy lives: segment 1 (older) and 2 (newest)
let scratch: string;

/** Records the proxy writes for `rollouts` rollouts of `calls` calls each, all finished. */
async function recordRollouts(dataDir: string, first: number, count: number): Promise<void> {
  const t = await startProxyUnderTest({ dataDir, chunks: 2 });
  try {
    for (let i = first; i < first + count; i++) {
      const r = await t.register(`task-${i % 10}`);
      for (let c = 0; c < CALLS_PER_ROLLOUT; c++) {
        const res = await t.chat(r, `rollout ${i} call ${c}`);
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
      const fin = await fetch(`${t.proxy.url}/control/rollouts/${r.rollout_id}/finish`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: JSON.stringify({ reward: i % 2, status: "ok" }),
      });
      expect(fin.status).toBe(200);
    }
  } finally {
    await t.proxy.stop();
    await t.upstream.stop();
  }
}

async function all(dataDir: string): Promise<{ records: LoggedRecord[]; damaged: number }> {
  const records: LoggedRecord[] = [];
  let damaged = 0;
  for await (const r of readRecords(dataDir, { onCorruption: () => damaged++ })) records.push(r);
  return { records, damaged };
}

const count = (records: LoggedRecord[], kind: string) => records.filter((r) => r.record.kind.case === kind).length;

/** A copy of the pristine data dir with one bit flipped in the payload of `target`. */
function damagedCopy(target: LoggedRecord, into = 40): string {
  const dir = mkdtempSync(join(scratch, "case-"));
  cpSync(pristine, dir, { recursive: true });
  const path = join(dir, "log", target.segment);
  const bytes = readFileSync(path);
  bytes[target.offset + 16 + into]! ^= 0x04;
  writeFileSync(path, bytes);
  return dir;
}

function exportCli(dataDir: string, extra: string[] = []) {
  const out = join(dataDir, "exports", "batch.jsonl");
  const r = Bun.spawnSync(["bun", join(ROOT, "bin", "forge.ts"), "export", "--data", dataDir, "--format", "jsonl", "--min-group-size", "1", "--out", out, "--json", ...extra], { cwd: ROOT });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

function analyzeCli(dataDir: string, extra: string[] = []) {
  const r = Bun.spawnSync(["bun", join(ROOT, "bin", "forge.ts"), "analyze", "--data", dataDir, "--json", "--quiet", ...extra], { cwd: ROOT });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "forge-corruption-"));
  pristine = join(scratch, "pristine");
  await recordRollouts(pristine, 0, ROLLOUTS / 2);
  await recordRollouts(pristine, ROLLOUTS / 2, ROLLOUTS / 2);
  expect((await listSegments(pristine)).map((s) => s.name)).toEqual(["seg-00000001.forge", "seg-00000002.forge"]);
  const { records, damaged } = await all(pristine);
  expect({ damaged, rollouts: count(records, "rollout"), calls: count(records, "modelCall") }).toEqual({ damaged: 0, rollouts: ROLLOUTS, calls: ROLLOUTS * CALLS_PER_ROLLOUT });
}, 240_000);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("one flipped byte loses only the frame it lands in", () => {
  test("in an older segment: 799 of 800 calls are read; export fails without --skip-corrupt and reports counts with it", async () => {
    const { records } = await all(pristine);
    const calls = records.filter((r) => r.segment === "seg-00000001.forge" && r.record.kind.case === "modelCall");
    const target = calls[Math.floor(calls.length / 4)]!;
    const dir = damagedCopy(target);
    const after = await all(dir);
    expect({ damaged: after.damaged, calls: count(after.records, "modelCall"), rollouts: count(after.records, "rollout") }).toEqual({ damaged: 1, calls: ROLLOUTS * CALLS_PER_ROLLOUT - 1, rollouts: ROLLOUTS });

    const strict = exportCli(dir);
    expect(strict.code).toBe(1);
    expect(strict.stderr).toMatch(new RegExp(`seg-00000001\\.forge: CRC mismatch at offset ${target.offset}.*--skip-corrupt`));
    const skipping = exportCli(dir, ["--skip-corrupt"]);
    expect(skipping.code).toBe(0);
    expect(skipping.stderr).toMatch(/skipped 1 damaged byte ranges \(\d+ bytes\) in 1 segments \(seg-00000001\.forge\)/);
    const manifest = JSON.parse(skipping.stdout);
    expect(manifest.rollouts.seen).toBe(ROLLOUTS);
    expect(manifest.calls.total).toBe(ROLLOUTS * CALLS_PER_ROLLOUT - 1);

    // forge analyze holds to the same rule: no metrics over a log with holes unless asked.
    const strictAnalyze = analyzeCli(dir);
    expect(strictAnalyze.code).toBe(1);
    expect(strictAnalyze.stderr).toMatch(new RegExp(`seg-00000001\\.forge: CRC mismatch at offset ${target.offset}.*--skip-corrupt`));
    const skippingAnalyze = analyzeCli(dir, ["--skip-corrupt"]);
    expect(skippingAnalyze.stderr).toMatch(/read past 1 damaged range\(s\), \d+ bytes/);
    expect(skippingAnalyze.code).toBe(0);
    const analysis = JSON.parse(skippingAnalyze.stdout);
    expect(analysis.compaction.records).toBe(count(after.records, "modelCall") + count(after.records, "rollout") + count(after.records, "rolloutResult") + count(after.records, "blob"));
  }, 120_000);

  test("in a registration record: readers lose that rollout; a restarted proxy keeps it from the segment index and quarantines the damage after the start, and without indexes 199 of 200 remain", async () => {
    const { records } = await all(pristine);
    const registrations = records.filter((r) => r.record.kind.case === "rollout");
    const target = registrations[37]!;
    const lost = (target.record.kind.value as { rolloutId: string }).rolloutId;
    const dir = damagedCopy(target, 10);
    const after = await all(dir);
    expect({ damaged: after.damaged, rollouts: count(after.records, "rollout"), calls: count(after.records, "modelCall") }).toEqual({ damaged: 1, rollouts: ROLLOUTS - 1, calls: ROLLOUTS * CALLS_PER_ROLLOUT });
    expect(after.records.some((r) => r.record.kind.case === "rollout" && r.record.kind.value.rolloutId === lost)).toBe(false);

    // The segment's index was written while the record was intact: the restarted proxy keeps
    // the rollout (its state comes from the index), and the check after the start finds and
    // quarantines the damage as an open would.
    const indexed = await startProxyUnderTest({ dataDir: dir });
    try {
      expect(indexed.proxy.proxy.state.restored).toMatchObject({ rollouts: ROLLOUTS, calls: ROLLOUTS * CALLS_PER_ROLLOUT, indexed: 2, scanned: 0 });
      expect(indexed.proxy.proxy.state.registry.get(lost)?.result).toBeDefined();
      const found = await indexed.proxy.proxy.state.integrity;
      expect(found).toEqual([expect.objectContaining({ segment: target.segment, offset: target.offset, truncated: false })]);
      expect(indexed.proxy.proxy.state.restored.damaged).toBe(1);
    } finally {
      await indexed.proxy.stop();
      await indexed.upstream.stop();
    }
    // Without the indexes the log is read as before: the rollout whose registration was lost is not restored.
    rmSync(join(dir, "log", "index"), { recursive: true });
    const t = await startProxyUnderTest({ dataDir: dir });
    try {
      expect(t.proxy.proxy.state.restored).toMatchObject({ rollouts: ROLLOUTS - 1, calls: ROLLOUTS * CALLS_PER_ROLLOUT, damaged: 1, indexed: 0 });
      expect(t.proxy.proxy.state.registry.get(lost)).toBeUndefined();
    } finally {
      await t.proxy.stop();
      await t.upstream.stop();
    }
  }, 60_000);

  test("in the newest segment: a restarted proxy cuts nothing, keeps every intact record and quarantines the damaged frame", async () => {
    const { records } = await all(pristine);
    const inNewest = records.filter((r) => r.segment === "seg-00000002.forge");
    const target = inNewest[Math.floor(inNewest.length / 2)]!;
    const dir = damagedCopy(target);
    const path = join(dir, "log", "seg-00000002.forge");
    const size = statSync(path).size;

    const t = await startProxyUnderTest({ dataDir: dir });
    let quarantined: string;
    try {
      // The segment's index vouched for it at the open; the check after the start finds the damage.
      expect(t.proxy.proxy.state.log.recovered).toEqual([]);
      const recovered = await t.proxy.proxy.state.integrity;
      expect(recovered).toEqual([expect.objectContaining({ segment: "seg-00000002.forge", offset: target.offset, truncated: false, cutBytes: 0 })]);
      quarantined = recovered[0]!.quarantine;
      // The restarted proxy records on, into a new segment.
      const r = await t.register("after-restart");
      expect((await t.chat(r, "after the restart")).status).toBe(200);
    } finally {
      await t.proxy.stop();
      await t.upstream.stop();
    }
    expect(statSync(path).size).toBe(size);
    const next = inNewest[inNewest.indexOf(target) + 1]!;
    expect(readFileSync(quarantined)).toEqual(readFileSync(path).subarray(target.offset, next.offset));
    expect(readdirSync(join(dir, "log", "quarantine"))).toContain("index.jsonl");
    const after = await all(dir);
    expect(after.damaged).toBe(1);
    expect(after.records.length).toBe(records.length - 1 + 2); // the lost frame; the new rollout and its call
  }, 60_000);

  test("a torn final frame (a writer killed mid-append) is the one thing cut, and it is quarantined first", async () => {
    const dir = mkdtempSync(join(scratch, "torn-"));
    cpSync(pristine, dir, { recursive: true });
    const path = join(dir, "log", "seg-00000002.forge");
    const bytes = readFileSync(path);
    const torn = bytes.subarray(0, bytes.length - 7);
    writeFileSync(path, torn);
    const { records } = await all(pristine);
    const lastOffset = records.at(-1)!.offset;
    const t = await startProxyUnderTest({ dataDir: dir });
    try {
      expect(t.proxy.proxy.state.log.recovered).toEqual([expect.objectContaining({ segment: "seg-00000002.forge", offset: lastOffset, truncated: true, cutBytes: torn.length - lastOffset })]);
      expect(existsSync(t.proxy.proxy.state.log.recovered[0]!.quarantine)).toBe(true);
    } finally {
      await t.proxy.stop();
      await t.upstream.stop();
    }
    expect(statSync(path).size).toBe(lastOffset);
    expect((await all(dir)).records.length).toBe(records.length - 1);
  }, 60_000);
});
