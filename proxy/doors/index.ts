/** The front doors the proxy serves; a new protocol is one more module in this list. */
import { chatFrontDoor } from "./chat.ts";
import { completionsFrontDoor } from "./completions.ts";
import type { FrontDoor } from "./types.ts";
import { anthropicMessagesDoor, responsesDoor } from "./doors.ts";

export const DEFAULT_FRONT_DOORS: readonly FrontDoor[] = [chatFrontDoor, completionsFrontDoor, anthropicMessagesDoor, responsesDoor];
export { chatFrontDoor, completionsFrontDoor };
export type { FrontDoor, PreparedCall } from "./types.ts";
export { translatedFrontDoor, type TranslatedCall } from "./translated.ts";
