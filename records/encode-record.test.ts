import { describe, expect, test } from "bun:test";
import { equals } from "@bufbuild/protobuf";
import { crc32c } from "@node-rs/crc32";
import { create, fromBinary, RecordSchema, StoredBodySchema, toBinary, type Record } from "../schemas/index.ts";
import { encodeRecord, SPLIT_THRESHOLD_BYTES } from "./encode-record.ts";
import { expectedBody, modelCallRecord, recordsOfEveryKind } from "./testing.ts";

const concat = (parts: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(parts));

function withBodies(base: Record, bodies: { request?: Uint8Array; response?: Uint8Array; upstream?: Uint8Array }): Record {
  if (base.kind.case !== "modelCall") throw new Error("not a model call");
  const value = { ...base.kind.value };
  if (bodies.request) value.requestBody = bodies.request;
  if (bodies.response) value.responseBody = bodies.response;
  if (bodies.upstream) value.upstreamRequestBody = bodies.upstream;
  return create(RecordSchema, { kind: { case: "modelCall", value } });
}

const big = (id: string, n: number) => expectedBody(id, n);
const blob = (data: Uint8Array) => create(RecordSchema, { kind: { case: "blob", value: { sha256: "cd".repeat(32), mediaType: "image/png", data } } });

describe("encodeRecord", () => {
  const cases: [string, Record][] = [
    ["200 KB request only", withBodies(modelCallRecord("r", 2, "c", 10), { request: big("a", 200_000) })],
    ["request, response and upstream body all big", withBodies(modelCallRecord("r", 1, "c", 10), { request: big("a", 300_000), response: big("b", 70_000), upstream: big("c", 300_001) })],
    ["big response, empty request", withBodies(modelCallRecord("r", 1, "c", 0), { response: big("b", SPLIT_THRESHOLD_BYTES) })],
    ["4 MB blob", blob(big("png", 4 << 20))],
    // Content pieces (a repeated bytes field): a screenshot, a message, an empty piece; a stored body.
    [
      "content pieces and a stored request body",
      create(RecordSchema, {
        kind: {
          case: "modelCall",
          value: {
            ...(modelCallRecord("r", 3, "c", 0).kind.value as object),
            requestBody: new Uint8Array(0),
            content: [big("shot", 300_000), big("msg", 900), new Uint8Array(0), big("x", 70_000).subarray(5)],
            requestStored: create(StoredBodySchema, { prefixSeq: 2, prefixItems: 7, literal: big("lit", 40), items: [80, 1, 3, 5, 3], length: 371_015 }),
          },
        },
      }),
    ],
    // A body that is a view into a larger buffer (as a request body read from a socket can be).
    ["bodies that are subarrays", withBodies(modelCallRecord("r", 1, "c", 10), { request: big("x", 400_000).subarray(1234, 300_000), upstream: big("y", 100_000).subarray(7) })],
  ];
  for (const [name, record] of cases) {
    test(`${name}: decodes to the same record, big fields not copied, CRC over parts`, () => {
      const { parts, length } = encodeRecord(record);
      expect(parts.length).toBeGreaterThan(2);
      const payload = concat(parts);
      expect(payload.length).toBe(length);
      expect(equals(RecordSchema, fromBinary(RecordSchema, payload), record)).toBe(true);
      // Same message as toBinary's, only the field order may differ.
      expect(equals(RecordSchema, fromBinary(RecordSchema, payload), fromBinary(RecordSchema, toBinary(RecordSchema, record)))).toBe(true);
      expect(payload.length).toBe(toBinary(RecordSchema, record).length);
      const value = record.kind.value as { [k: string]: unknown };
      for (const field of ["requestBody", "responseBody", "upstreamRequestBody", "data"]) {
        const bytes = value[field];
        if (bytes instanceof Uint8Array && bytes.length > 0) expect(parts.some((p) => p === bytes)).toBe(true);
      }
      for (const piece of (value.content as Uint8Array[] | undefined) ?? []) if (piece.length > 0) expect(parts.some((p) => p === piece)).toBe(true);
      let crc = 0;
      for (const part of parts) crc = crc32c(part, crc);
      expect(crc >>> 0).toBe(crc32c(payload) >>> 0);
    });
  }

  test("small records are one plain toBinary", () => {
    for (const record of [...recordsOfEveryKind(), withBodies(modelCallRecord("r", 1, "c", 10), { request: big("a", SPLIT_THRESHOLD_BYTES - 100), response: big("b", 99) })]) {
      const { parts, length } = encodeRecord(record);
      expect(parts).toHaveLength(1);
      expect(parts[0]).toEqual(toBinary(RecordSchema, record));
      expect(length).toBe(parts[0]!.length);
    }
  });

  test("threshold 0 splits even records with every big field empty", () => {
    for (const record of [withBodies(modelCallRecord("r", 1, "c", 0), {}), blob(new Uint8Array(0)), modelCallRecord("r", 3, "c", 5)]) {
      const { parts } = encodeRecord(record, 0);
      expect(equals(RecordSchema, fromBinary(RecordSchema, concat(parts)), record)).toBe(true);
    }
  });

  test("a record whose body is not bytes is left to toBinary, which rejects it", () => {
    const record = withBodies(modelCallRecord("r", 1, "c", 0), { request: big("a", 100_000) });
    (record.kind.value as { responseBody: unknown }).responseBody = "not bytes";
    expect(() => encodeRecord(record)).toThrow();
  });

  test("crc32c with initial state 0 is crc32c", () => {
    const bytes = big("z", 1000);
    expect(crc32c(bytes, 0)).toBe(crc32c(bytes));
    expect(crc32c(new Uint8Array(0), crc32c(bytes))).toBe(crc32c(bytes));
  });
});
