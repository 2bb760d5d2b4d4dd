import { expect, test } from "bun:test";
import { create } from "@bufbuild/protobuf";
import { ModelCallSchema, TokenStatus } from "../schemas/index.ts";
import { promptResolver } from "./resolve.ts";

const call = (callId: string, seq: number, prompt: number[], completion: number[], prefixOf = "", prefixLen = 0) =>
  create(ModelCallSchema, { callId, rolloutId: "r", seq, promptTokenIds: prompt, completionTokenIds: completion, prefixOf, prefixLen, tokenStatus: TokenStatus.COMPLETE });

test("a call's prompt is rebuilt from the delta chain once per run of reads, not on every access", () => {
  const r = promptResolver();
  const first = r.add(call("c1", 1, [1, 2, 3], [4, 5]));
  const second = r.add(call("c2", 2, [6], [7], "c1", 5));
  const third = r.add(call("c3", 3, [8], [9], "c2", 4));
  expect(third.prompt).toEqual([1, 2, 3, 4, 8]);
  // The same materialized prompt while it is read again (assembly reads a call's prompt several times in a row).
  expect(third.prompt).toBe(third.prompt!);
  expect(second.prompt).toEqual([1, 2, 3, 4, 5, 6]);
  expect(first.prompt).toEqual([1, 2, 3]);
  expect(third.prompt).toEqual([1, 2, 3, 4, 8]);
});
