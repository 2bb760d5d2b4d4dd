/**
 * Small building blocks every area uses and none owns: the CLI's argument parsing and usage
 * errors, Server-Sent Events, byte joins, SQL string literals.
 */
export { intFlag, parseCommand, untilSignal, UsageError, type CommandSpec } from "./cli.ts";
export { concatBytes } from "./bytes.ts";
export { sqlString } from "./sql.ts";
export { createSseDecoder, parseSseText, sseEvent, type SseDecoder, type SseMessage } from "./sse.ts";
