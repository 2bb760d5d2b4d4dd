/**
 * The data dir on a real, tiny filesystem (a 1 MiB tmpfs, mounted here when we are root) that
 * fills up under the proxy, and EROFS / ENOSPC injected into the recorder's writes (root ignores
 * permissions, and a tmpfs with open files cannot be remounted read-only): calls are refused with
 * a clear error rather than served and lost, and /healthz says why. Without mount rights the
 * tmpfs test is skipped; the injected ones always run.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { fdatasync, fdatasyncSync, ftruncateSync, mkdtempSync, rmSync, writeFileSync, writevSync } from "node:fs";
import { promisify } from "node:util";
import type { WriterIo } from "../../records/index.ts";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readAll, startProxyUnderTest, type ProxyUnderTest } from "./proxy-under-test.ts";

function mountTmpfs(size: string): string | null {
  if (process.getuid?.() !== 0) return null;
  const dir = mkdtempSync(join(tmpdir(), "forge-tinyfs-"));
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { encoding: "utf8" });
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
  return dir;
}
function unmount(dir: string) {
  spawnSync("umount", ["-l", dir]);
  rmSync(dir, { recursive: true, force: true });
}
const canMount = (() => {
  const d = mountTmpfs("64k");
  if (!d) return false;
  unmount(d);
  return true;
})();

function fill(dir: string) {
  // Fill the filesystem to the last byte: big chunks first, then small ones.
  let n = 0;
  for (const size of [256 * 1024, 16 * 1024, 1024, 64, 1]) {
    for (;;) {
      try {
        writeFileSync(join(dir, `filler-${n++}`), new Uint8Array(size));
      } catch {
        break;
      }
    }
  }
}

/** Every call the harness saw succeed is in the log; returns how many were refused. */
async function servedAreRecorded(t: ProxyUnderTest, served: string[]) {
  const ids = new Set((await t.calls()).map((c) => c.callId));
  return served.filter((id) => !ids.has(id));
}

describe.skipIf(!canMount)("disk full (data dir on a 1 MiB tmpfs)", () => {
  let fs: string;
  let t: ProxyUnderTest;
  beforeAll(async () => {
    fs = mountTmpfs("1m")!;
    t = await startProxyUnderTest({ dataDir: join(fs, "data"), chunks: 4 });
  });
  afterAll(async () => {
    await t.close().catch(() => {});
    unmount(fs);
  });

  test("calls are refused with 503 naming ENOSPC, no call is served unrecorded, /healthz says why", async () => {
    const r = await t.register();
    expect((await t.chat(r, "before")).status).toBe(200);
    fill(fs);
    // The log's last page may still hold a few records: call until the proxy refuses.
    const served: string[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 400 && !refused; i++) {
      const res = await t.chat(r, `call ${i} ${"x".repeat(2000)}`, { stream: i % 2 === 1 });
      if (res.status === 503) refused = res;
      else {
        const { text } = await readAll(res);
        if (res.status === 200 && (i % 2 === 0 || text.includes("data: [DONE]"))) served.push(res.headers.get("x-forge-call-id")!);
      }
    }
    expect(refused).toBeDefined();
    expect(((await refused!.json()) as any).error.message).toMatch(/ENOSPC|no space/i);
    expect(await servedAreRecorded(t, served)).toEqual([]);
    const health = await fetch(`${t.proxy.url}/healthz`);
    expect(health.status).toBe(503);
    const body = (await health.json()) as any;
    expect(body.ok).toBe(false);
    expect(body.recorder).toMatch(/cannot be written.*(ENOSPC|no space)/i);
    const stream = await t.chat(r, "stream after the refusal", { stream: true });
    expect(stream.status).toBe(503);
    await stream.text();
  });
});

describe("data dir turns read-only (EROFS injected into the recorder's writes)", () => {
  let failing = false;
  const erofs = () => Object.assign(new Error("EROFS: read-only file system, write"), { code: "EROFS", errno: -30 });
  const io: WriterIo = {
    writev: (fd, buffers, position) => {
      if (failing) throw erofs();
      return writevSync(fd, buffers, position);
    },
    ftruncate: (fd, length) => ftruncateSync(fd, length),
    fdatasync: (fd) => (failing ? Promise.reject(erofs()) : promisify(fdatasync)(fd)),
    fdatasyncSync: (fd) => {
      if (failing) throw erofs();
      fdatasyncSync(fd);
    },
  };
  let t: ProxyUnderTest;
  beforeAll(async () => {
    t = await startProxyUnderTest({ chunks: 4, proxy: { recorderIo: io } });
  });
  afterAll(() => t.close().catch(() => {}));

  test("a non-stream call is refused (503), then /healthz and every later call say why", async () => {
    const r = await t.register();
    expect((await t.chat(r, "before")).status).toBe(200);
    failing = true;
    const res = await t.chat(r, "now read-only");
    expect(res.status).toBe(503);
    expect(((await res.json()) as any).error.message).toMatch(/EROFS/);
    const health = await fetch(`${t.proxy.url}/healthz`);
    expect(health.status).toBe(503);
    expect(((await health.json()) as any).recorder).toMatch(/EROFS/);
    const stream = await t.chat(r, "stream", { stream: true });
    expect(stream.status).toBe(503);
    await stream.text();
    failing = false;
  });
});

describe("a stream whose record cannot be written", () => {
  let failing = false;
  const io: WriterIo = {
    writev: (fd, buffers, position) => {
      if (failing) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", errno: -28 });
      return writevSync(fd, buffers, position);
    },
    ftruncate: (fd, length) => ftruncateSync(fd, length),
    fdatasync: promisify(fdatasync),
    fdatasyncSync: (fd) => fdatasyncSync(fd),
  };
  let t: ProxyUnderTest;
  beforeAll(async () => {
    t = await startProxyUnderTest({ chunks: 4, proxy: { recorderIo: io } });
  });
  afterAll(() => t.close().catch(() => {}));

  test("the harness does not get a clean end of stream for a call that is not in the log", async () => {
    const r = await t.register();
    failing = true; // the disk fills while no call has failed yet: the recorder does not know
    const res = await t.chat(r, "first call after the disk filled", { stream: true });
    const { text } = await readAll(res);
    const recorded = (await t.calls()).some((c) => c.callId === res.headers.get("x-forge-call-id"));
    expect(recorded).toBe(false);
    if (res.status === 200) {
      expect(text).not.toContain("data: [DONE]");
      expect(text).toMatch(/could not be recorded|ENOSPC/);
    } else expect(res.status).toBe(503);
    failing = false;
  });
});
