import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runTool } from "./tools.ts";

describe("forge-react tools", () => {
  const cwd = mkdtempSync(join(tmpdir(), "forge-react-"));
  test("write creates directories, read reads back, bash runs in the working directory", async () => {
    expect((await runTool("write", JSON.stringify({ path: "a/b.txt", content: "hi\n" }), cwd)).output).toBe("wrote 3 bytes to a/b.txt");
    expect(readFileSync(join(cwd, "a", "b.txt"), "utf8")).toBe("hi\n");
    expect((await runTool("read", '{"path": "a/b.txt"}', cwd)).output).toBe("hi\n");
    expect((await runTool("bash", '{"command": "cat a/b.txt; echo oops >&2; exit 4"}', cwd)).output).toBe("exit code 4\nhi\noops\n");
  });
  test("finish carries the answer; bad calls are reported to the model, not thrown", async () => {
    expect(await runTool("finish", '{"answer": "done"}', cwd)).toEqual({ output: "finished", finished: "done" });
    expect((await runTool("bash", "{not json", cwd)).output).toContain("not JSON");
    expect((await runTool("read", '{"path": "missing.txt"}', cwd)).output).toContain("ENOENT");
    expect((await runTool("fly", "{}", cwd)).output).toContain('unknown tool "fly"');
  });
  test("a bash command past its limit is killed", async () => {
    expect((await runTool("bash", '{"command": "sleep 10"}', cwd, 200)).output).toContain("killed by SIGKILL");
  });
});
