import { expect, test } from "bun:test";
import { crc32c } from "@node-rs/crc32";
import { checkedFrameLength, FRAME_HEADER_BYTES, headerCrc, writeFrameHeader } from "./frame.ts";

test("headerCrc is CRC32C (the library's value) of 12 bytes at any offset", () => {
  for (let t = 0; t < 2000; t++) {
    const bytes = Buffer.from(crypto.getRandomValues(new Uint8Array(24)));
    const at = t % 12;
    expect(headerCrc(bytes, at)).toBe(crc32c(bytes.subarray(at, at + 12)) >>> 0);
  }
});

test("a written header checks out; any one flipped bit in it does not", () => {
  const header = Buffer.alloc(FRAME_HEADER_BYTES);
  writeFrameHeader(header, 1234, 0xdeadbeef);
  const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
  expect(checkedFrameLength(header, view, 0)).toBe(1234);
  for (let bit = 0; bit < FRAME_HEADER_BYTES * 8; bit++) {
    const damaged = Buffer.from(header);
    damaged[bit >> 3]! ^= 1 << (bit & 7);
    expect(checkedFrameLength(damaged, new DataView(damaged.buffer, damaged.byteOffset, damaged.byteLength), 0)).toBe(-1);
  }
});
