/**
 * Test helper: a valid PNG of a given size (solid colour, RGB, 8 bits), so tests can size real
 * image bytes as PIL and vLLM would decode them. For tests only.
 */
import { crc32 } from "@node-rs/crc32";
import { deflateSync } from "node:zlib";
// Names only tests use outside the model area (docs/architecture.md: a face exports what other areas use).
export { toolCallParserFactory, reasoningParserFactory } from "./parsers/registry.ts";
export { type ParserContext } from "./parsers/types.ts";
export { imageDimensions, imageTokenCount, QWEN2_VL_PROCESSOR, QWEN2_5_VL_PROCESSOR, type VisionProcessor } from "./vision.ts";
export { qwen25VlDir, qwen25VlSpec } from "./qwen2-5-vl.ts";
export { completeUtf8 } from "./token-texts.ts";

function chunk(type: string, data: Uint8Array): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "latin1");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
  return Buffer.concat([head, data, crc]);
}

/**
 * @example
 * solidPng(1280, 720).subarray(0, 8); // the PNG signature
 */
export function solidPng(width: number, height: number, rgb: [number, number, number] = [40, 80, 160]): Buffer {
  const pixels = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) pixels.set(rgb, i * 3);
  return rgbPng(width, height, pixels);
}

/**
 * A PNG of the given RGB pixels (`width * height * 3` bytes, row by row). `stored: true` keeps
 * the pixels uncompressed (deflate level 0), so the file's size follows the pixels'; `size`
 * pads the file to exactly that many bytes with a tEXt chunk (which decoders skip), for tests
 * that count stored bytes.
 *
 * @example
 * rgbPng(2, 1, Buffer.from([255, 0, 0, 0, 0, 255])); // a red and a blue pixel
 */
export function rgbPng(width: number, height: number, pixels: Uint8Array, options: { stored?: boolean; size?: number } = {}): Buffer {
  if (pixels.length !== width * height * 3) throw new Error(`rgbPng: ${pixels.length} bytes of pixels for ${width}x${height} (expected ${width * height * 3})`);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const stride = width * 3;
  const raw = Buffer.alloc(height * (1 + stride));
  for (let y = 0; y < height; y++) raw.set(pixels.subarray(y * stride, (y + 1) * stride), y * (1 + stride) + 1);
  const idat = deflateSync(raw, { level: options.stored ? 0 : 9 });
  const head = [Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", ihdr), chunk("IDAT", idat)];
  const end = chunk("IEND", new Uint8Array());
  if (options.size === undefined) return Buffer.concat([...head, end]);
  // tEXt: keyword, NUL, text; 12 bytes of chunk framing around it.
  const room = options.size - head.reduce((n, b) => n + b.length, 0) - end.length - 12 - 2;
  if (room < 0) throw new Error(`rgbPng: ${width}x${height} does not fit in ${options.size} bytes`);
  return Buffer.concat([...head, chunk("tEXt", Buffer.from(`c\0${"x".repeat(room)}`, "latin1")), end]);
}
