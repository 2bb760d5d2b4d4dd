/**
 * Small building blocks every area uses and none owns: the CLI's argument parsing and usage
 * errors, Server-Sent Events, byte joins, SQL string literals, the byte-level BPE alphabet,
 * common prefixes of token ids, strings a cache may keep, a map bounded by weight.
 */
export { intFlag, parseCommand, untilSignal, UsageError } from "./cli.ts";
export { concatBytes } from "./bytes.ts";
export { byteDecoder } from "./byte-level.ts";
export { commonPrefix } from "./prefix.ts";
export { sqlString } from "./sql.ts";
export { ownCopy } from "./strings.ts";
export { WeighedMap } from "./weighed-map.ts";
export { createSseDecoder, parseSseJson, sseEvent, type SseJsonEvent } from "./sse.ts";
