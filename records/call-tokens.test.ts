import { expect, test } from "bun:test";
import { create, ModelCallSchema, RecordSchema, toBinary, TokenStatus } from "../schemas/index.ts";
import { callTokensOf } from "./call-tokens.ts";
import { modelCallRecord, recordsOfEveryKind } from "./testing.ts";

test("the token view of a ModelCall: every token field as a full decode has it, no body", () => {
  const record = modelCallRecord("r-1", 7, "r-1-7", 5000);
  const call = record.kind.value as ReturnType<typeof create<typeof ModelCallSchema>>;
  call.policyVersion = 9;
  call.tokenStatus = TokenStatus.PARTIAL;
  call.promptTokenIds = Array.from({ length: 3000 }, (_, i) => (i * 7919) % 152_000);
  const view = callTokensOf(toBinary(RecordSchema, record))!;
  for (const field of ["rolloutId", "seq", "callId", "policyVersion", "promptTokenIds", "completionTokenIds", "tokenStatus", "prefixOf", "prefixLen", "promptLen"] as const) {
    expect(view[field]).toEqual(call[field] as never);
  }
  expect(view.requestBody.length).toBe(0);
  expect(view.responseBody.length).toBe(0);
});

test("other records have no token view; an empty call has empty fields", () => {
  for (const record of recordsOfEveryKind()) {
    const view = callTokensOf(toBinary(RecordSchema, record));
    if (record.kind.case === "modelCall") expect(view?.callId).toBe(record.kind.value.callId);
    else expect(view).toBeUndefined();
  }
  const empty = callTokensOf(toBinary(RecordSchema, create(RecordSchema, { kind: { case: "modelCall", value: create(ModelCallSchema) } })))!;
  expect({ ids: empty.promptTokenIds, seq: empty.seq, prefix: empty.prefixOf }).toEqual({ ids: [], seq: 0, prefix: "" });
});
