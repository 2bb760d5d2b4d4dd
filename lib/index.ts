/**
 * Small building blocks every area uses and none owns: the CLI's argument parsing and usage
 * errors, Server-Sent Events, byte joins, SQL string literals, the byte-level BPE alphabet,
 * common prefixes of token ids.
 */
export { intFlag, parseCommand, untilSignal, UsageError, type CommandSpec } from "./cli.ts";
export { concatBytes } from "./bytes.ts";
export { byteDecoder } from "./byte-level.ts";
export { commonPrefix } from "./prefix.ts";
export { sqlString } from "./sql.ts";
export { createSseDecoder, parseSseJson, parseSseText, sseEvent, type SseDecoder, type SseJsonEvent, type SseMessage } from "./sse.ts";
