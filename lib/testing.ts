/** Names of lib/ that only tests use outside it (docs/architecture.md, rule 5). */
export { parseSseText } from "./sse.ts";
