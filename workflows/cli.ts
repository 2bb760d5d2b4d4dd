/**
 * The `forge` commands of the workflows area, as a thin list: each command lives beside the
 * code it drives (`argo/cli.ts`, `local/cli.ts`) so engineers editing them do not collide here.
 */
export { renderCommand, submitCommand, watchCommand } from "./argo/cli.ts";
export { imagesCommand } from "./argo/images-cli.ts";
export { runCommand } from "./local/cli.ts";
export { demoCommand } from "./local/demo.ts";
