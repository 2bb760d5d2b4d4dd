/**
 * The on-disk frame format (docs/record-format.md):
 *   segment = "FORGESG1" frame*
 *   frame   = u32 LE payload length | u32 LE crc32c(payload) | payload (forge.v1.Record, protobuf binary)
 */

/** The 8-byte magic at the start of every segment file. */
export const SEGMENT_MAGIC = new TextEncoder().encode("FORGESG1");
export const SEGMENT_HEADER_BYTES = 8;
export const FRAME_HEADER_BYTES = 8;
/**
 * Largest payload a frame may carry. Far above any real record (a screenshot Blob is a few MB),
 * low enough that a garbage length is recognised as such instead of sending a reader to
 * allocate gigabytes. A length of 0 is never valid either: an all-zero tail (what some file
 * systems leave after a power loss) would otherwise read as empty records with CRC 0.
 */
export const MAX_PAYLOAD_BYTES = 1 << 30;

/** Whether `bytes` (up to 8 of them) could be the start of a segment header cut short. */
export function isHeaderPrefix(bytes: Uint8Array): boolean {
  return bytes.every((b, i) => b === SEGMENT_MAGIC[i]) || bytes.every((b) => b === 0);
}

/** Whether the 8 bytes are exactly the segment magic. */
export function isSegmentMagic(bytes: Uint8Array): boolean {
  return bytes.length === SEGMENT_HEADER_BYTES && bytes.every((b, i) => b === SEGMENT_MAGIC[i]);
}
