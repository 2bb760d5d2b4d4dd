/**
 * Test helper: a data directory whose log segments are given as record arrays, read through
 * a SegmentReader instead of the recorder (the segment files hold only a placeholder).
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Record } from "../schemas/index.ts";
import type { SegmentReader } from "./compact.ts";
import { fromArray } from "./fixtures.ts";

export type FakeLog = { dir: string; reads: string[]; readSegment: SegmentReader; addSegment(records: Record[]): Promise<string> };

/**
 * A data dir with `log/seg-*.forge` placeholders; `reads` lists every segment read.
 *
 * @example
 * const log = await fakeLog(); await log.addSegment(records);
 * await openAnalytics(log.dir, { readSegment: log.readSegment });
 */
export async function fakeLog(): Promise<FakeLog> {
  const dir = await mkdtemp(join(tmpdir(), "forge-analytics-"));
  await mkdir(join(dir, "log"), { recursive: true });
  const segments = new Map<string, Record[]>();
  const reads: string[] = [];
  return {
    dir,
    reads,
    readSegment: (_logDir, segment) => {
      reads.push(segment);
      const records = segments.get(segment);
      if (!records) throw new Error(`fake log: no segment ${segment}`);
      return fromArray(records);
    },
    async addSegment(records) {
      const name = `seg-${String(segments.size + 1).padStart(8, "0")}.forge`;
      segments.set(name, records);
      await writeFile(join(dir, "log", name), `FORGESG1${records.length}`);
      return name;
    },
  };
}

/** Headless Chromium for the render tests (`apt-get install -y chromium`); tests skip, saying so, without it. */
export const chromiumPath = "/usr/bin/chromium";

/**
 * Opens a local HTML file (or an http URL) in headless Chromium: the DOM after scripts ran, and a screenshot.
 *
 * @example
 * const { dom } = await headlessChromium("/tmp/report.html", "/tmp/report.png");
 */
export async function headlessChromium(file: string, screenshot: string, windowSize = "1280,2400"): Promise<{ dom: string; code: number }> {
  const profile = await mkdtemp(join(tmpdir(), "forge-chromium-"));
  try {
    const proc = Bun.spawn(
      [
        chromiumPath, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage", `--user-data-dir=${profile}`, `--window-size=${windowSize}`,
        `--screenshot=${screenshot}`, "--dump-dom", /^https?:\/\//.test(file) ? file : `file://${file}`,
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    const timer = setTimeout(() => proc.kill(), 90_000);
    const [dom, code] = [await new Response(proc.stdout).text(), await proc.exited];
    clearTimeout(timer);
    return { dom, code };
  } finally {
    await rm(profile, { recursive: true, force: true });
  }
}
