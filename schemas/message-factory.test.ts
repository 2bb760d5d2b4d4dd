import { describe, expect, test } from "bun:test";
import { create, equals, toBinary } from "@bufbuild/protobuf";
import { ModelCallSchema, RecordSchema, SamplingParamsSchema, StoredBodySchema, UsageSchema } from "./gen/forge/v1/records_pb.ts";
import { messageFactory } from "./message-factory.ts";

describe("messageFactory", () => {
  test("a new message equals create()'s, field for field and byte for byte", () => {
    for (const schema of [ModelCallSchema, RecordSchema, UsageSchema, StoredBodySchema, SamplingParamsSchema] as const) {
      const made = messageFactory(schema as any)() as any;
      const reference = create(schema as any) as any;
      expect(made).toEqual(reference);
      expect(Object.keys(made)).toEqual(Object.keys(reference));
      expect(equals(schema as any, made, reference)).toBe(true);
      expect(toBinary(schema as any, made)).toEqual(toBinary(schema as any, reference));
    }
  });

  test("init values are set, undefined ones keep the default", () => {
    const newCall = messageFactory(ModelCallSchema);
    const init = { rolloutId: "ro-1", callId: "c-1", model: "m", stream: true, seq: undefined };
    const made = newCall(init);
    expect(made).toEqual(create(ModelCallSchema, init));
    expect(toBinary(ModelCallSchema, made)).toEqual(toBinary(ModelCallSchema, create(ModelCallSchema, init)));
    const usage = messageFactory(UsageSchema)({ promptTokens: 5, totalTokens: 7 });
    expect(usage).toEqual(create(UsageSchema, { promptTokens: 5, totalTokens: 7 }));
    const record = messageFactory(RecordSchema)({ kind: { case: "modelCall", value: made } });
    expect(toBinary(RecordSchema, record)).toEqual(toBinary(RecordSchema, create(RecordSchema, { kind: { case: "modelCall", value: made } })));
  });

  test("each message has its own lists, maps and oneof holder", () => {
    const newCall = messageFactory(ModelCallSchema);
    const a = newCall();
    const b = newCall();
    a.completionTokenIds.push(1);
    a.content.push(new Uint8Array([1]));
    expect(b.completionTokenIds).toEqual([]);
    expect(b.content).toEqual([]);
    const newRecord = messageFactory(RecordSchema);
    const r1 = newRecord();
    const r2 = newRecord();
    (r1.kind as any).case = "modelCall";
    expect(r2.kind.case).toBeUndefined();
    for (const key of Object.keys(a)) {
      const value = (a as any)[key];
      if (value !== null && typeof value === "object" && !(value instanceof Uint8Array)) expect((b as any)[key]).not.toBe(value);
    }
  });
});
