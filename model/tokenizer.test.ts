import { expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { join } from "node:path";

/**
 * A proxy in token-in mode holds its model's tokenizer for its whole life, and every full
 * collection marks what it holds. The library's BPE model keeps tokenizer.json's `model`
 * section (151k vocabulary properties, 151k merge pairs) though it encodes without it; the
 * tokenizer lets it go. Measured in a process of its own, so nothing else loaded counts.
 */
test("Qwen3's tokenizer holds its vocabulary once, not tokenizer.json's merges and vocabulary object too", () => {
  const script = `
    import { heapStats } from "bun:jsc";
    import { loadTokenizerFrom } from ${JSON.stringify(join(import.meta.dir, "tokenizer.ts"))};
    import { QWEN3 } from ${JSON.stringify(join(import.meta.dir, "model.ts"))};
    Bun.gc(true);
    const before = heapStats().objectCount;
    const tokenizer = await loadTokenizerFrom(QWEN3.dir);
    await Bun.sleep(1);
    Bun.gc(true);
    Bun.gc(true);
    console.log(JSON.stringify({ objects: heapStats().objectCount - before, hello: tokenizer.encode("Hello world") }));
  `;
  const run = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", cwd: join(import.meta.dir, "..") });
  expect(run.stderr).toBe("");
  const { objects, hello } = JSON.parse(run.stdout.trim().split("\n").at(-1)!);
  expect(hello).toEqual([9707, 1879]);
  // ~310k objects (the vocabulary's 151k strings and the merge ranks' 151k keys); ~650k when
  // the model section is kept (its vocabulary object's names and the merges' 151k arrays).
  expect(objects).toBeLessThan(450_000);
});
