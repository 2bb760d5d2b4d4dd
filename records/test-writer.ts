/**
 * A child process for tests (tests/records/recorder-crash.test.ts, reader.test.ts): opens the log in
 * DIR and appends records from STREAMS concurrent async loops as fast as it can, printing each
 * call id on stdout once its append has returned. Runs until killed, or until MAX records.
 *
 *   bun proxy/recorder/test-writer.ts DIR STREAMS BODY_BYTES [MAX] [GROUP_COMMIT_MS] [SEGMENT_MAX_BYTES]
 *
 * Call ids are `s<stream>-<n>`; request_body is `expectedBody(id, size)` with the size varying
 * per record (up to BODY_BYTES) so frames straddle pages and chunks.
 */
import { openSegmentLog } from "./segment-log.ts";
import { bodySizeFor, modelCallRecord } from "./testing.ts";

const [dir, streamsArg = "1", bodyArg = "1024", maxArg = "0", commitArg = "50", segmentArg = String(256 << 20)] = process.argv.slice(2);
if (!dir) {
  console.error("usage: bun proxy/recorder/test-writer.ts DIR STREAMS BODY_BYTES [MAX] [GROUP_COMMIT_MS] [SEGMENT_MAX_BYTES]");
  process.exit(2);
}
const streams = Number(streamsArg);
const bodyBytes = Number(bodyArg);
const max = Number(maxArg) || Infinity;
const log = await openSegmentLog(dir, { groupCommitMs: Number(commitArg), segmentMaxBytes: Number(segmentArg) });
let total = 0;
// Ids go out in one write per batch; a kill between append and print only loses the claim.
let pending: string[] = [];
const flush = (): void => {
  if (pending.length === 0) return;
  process.stdout.write(`${pending.join("\n")}\n`);
  pending = [];
};
process.stdout.write(`ready ${process.pid}\n`);

async function stream(s: number): Promise<void> {
  for (let n = 1; total < max; n++) {
    const id = `s${s}-${n}`;
    const size = bodySizeFor(s, n, bodyBytes);
    log.append(modelCallRecord(`s${s}`, n, id, size));
    total += 1;
    pending.push(id);
    if (pending.length >= 16) flush();
    // Yield so the streams interleave and the group-commit timer runs, as in the proxy.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

await Promise.all(Array.from({ length: streams }, (_, s) => stream(s)));
flush();
await log.close();
process.stdout.write("done\n");
