/**
 * Client for the reference oracle (tests/reference/oracle.py): a long-running Python process in
 * the pinned venv that python/build-env.sh builds, asked for reference answers by the real
 * transformers, vLLM 0.33.0, SGLang 0.5.23 and veRL 0.9.1 over JSON lines. See oracle.py for the
 * ops and their answers. A missing .venv/reference is an error, never a skip (`bun run test` and
 * .ci/run build it); the opt-in .venv/sglang-native's checks skip without it, saying so.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";

export interface Oracle {
  /** Sends one request; resolves with its answer (an `{ error }` answer is returned, not thrown). */
  call(req: Record<string, unknown>): Promise<any>;
  /** Asks the process to exit and waits for it (kills it after 5 s). */
  close(): Promise<void>;
}

export interface OracleOptions {
  /** The venv under .venv/: "reference" (default) or "sglang-native" (sglang.GenerateReqInput). */
  venv?: string;
  /** Extra environment for the process (e.g. ORACLE_TOKENIZER_DIR). */
  env?: Record<string, string>;
}

const ROOT = resolve(import.meta.dir, "../..");
const STDERR_KEEP = 8000;

/** The venv's python, or a clear error naming the build script. */
export function oraclePython(venv = "reference"): string {
  const python = join(ROOT, ".venv", venv, "bin", "python");
  if (!existsSync(python) || !existsSync(join(ROOT, ".venv", venv, ".stamp"))) {
    const flag = venv === "sglang-native" ? " --with-sglang-native" : "";
    throw new Error(
      `reference oracle: the Python venv .venv/${venv} is missing or unfinished; build it with ` +
        `\`bash python/build-env.sh${flag}\` in the repo root (.ci/run does this before \`bun test\`)`,
    );
  }
  return python;
}

/**
 * Why the checks that need .venv/sglang-native (SGLang's native GenerateReqInput and io_struct
 * types; opt-in: `bash python/build-env.sh --with-sglang-native`, ~6 GB) are skipped here, or
 * undefined when they run: the venv is built, or FORGE_REQUIRE_SGLANG_NATIVE=1 (.ci/run sets it,
 * and builds the venv) makes a missing one an error instead of a skip.
 */
export function sglangNativeSkipReason(): string | undefined {
  if (process.env.FORGE_REQUIRE_SGLANG_NATIVE === "1") return undefined;
  if (existsSync(join(ROOT, ".venv", "sglang-native", ".stamp"))) return undefined;
  return "skipped: .venv/sglang-native is not built (opt-in: `bash python/build-env.sh --with-sglang-native`, ~6 GB; CI builds it)";
}

export async function startOracle(opts: OracleOptions = {}): Promise<Oracle> {
  const python = oraclePython(opts.venv);
  const proc = Bun.spawn([python, join(ROOT, "tests", "reference", "oracle.py")], {
    cwd: ROOT,
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, PYTHONUNBUFFERED: "1", ...opts.env },
  });

  let stderr = "";
  (async () => {
    const dec = new TextDecoder();
    for await (const chunk of proc.stderr) {
      stderr = (stderr + dec.decode(chunk, { stream: true })).slice(-STDERR_KEEP);
    }
  })().catch(() => {});

  type Waiter = { resolve: (v: any) => void; reject: (e: Error) => void };
  const waiting: Waiter[] = [];
  let exited = false;
  const died = () =>
    new Error(`reference oracle exited (code ${proc.exitCode}); its stderr ends with:\n${stderr}`);

  (async () => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of proc.stdout) {
      buf += dec.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.trim()) continue;
        const w = waiting.shift();
        if (!w) continue;
        try {
          w.resolve(JSON.parse(line));
        } catch (e) {
          w.reject(new Error(`reference oracle: unparsable answer ${JSON.stringify(line.slice(0, 200))}`));
        }
      }
    }
  })()
    .catch(() => {})
    .finally(async () => {
      await proc.exited;
      exited = true;
      for (const w of waiting.splice(0)) w.reject(died());
    });

  // Serialize writes: answers come back in request order.
  let chain: Promise<unknown> = Promise.resolve();
  const call = (req: Record<string, unknown>): Promise<any> => {
    const p = chain.then(
      () =>
        new Promise<any>((resolve, reject) => {
          if (exited) return reject(died());
          waiting.push({ resolve, reject });
          proc.stdin.write(JSON.stringify(req) + "\n");
          proc.stdin.flush();
        }),
    );
    chain = p.catch(() => {});
    return p;
  };

  const close = async () => {
    if (!exited) {
      try {
        await Promise.race([call({ op: "shutdown" }), Bun.sleep(5000)]);
        proc.stdin.end();
      } catch {}
    }
    const done = await Promise.race([proc.exited.then(() => true), Bun.sleep(5000).then(() => false)]);
    if (!done) proc.kill();
    await proc.exited;
  };

  const hello = await call({ op: "ping" }).catch((e) => {
    throw new Error(`reference oracle did not start: ${e.message}`);
  });
  if (!hello?.ok) throw new Error(`reference oracle did not start: ${JSON.stringify(hello)}\n${stderr}`);
  return { call, close };
}
