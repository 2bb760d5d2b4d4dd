/** `POST /v1/chat/completions`: OpenAI Chat Completions, passed through. */
import { Protocol } from "../../schemas/index.ts";
import { ProxyHttpError } from "../errors.ts";
import { harnessWants } from "../capture/tokens.ts";
import type { FrontDoor } from "./types.ts";
import { openAiDoorError, passEngineError, requireModel, streamFlag } from "./openai-body.ts";
import { parseHidingStrings } from "./hidden-strings.ts";

/**
 * The Chat Completions front door.
 *
 * @example
 * chatFrontDoor.prepare({ model: "m", messages: [{ role: "user", content: "hi" }] }).upstreamPath // "/v1/chat/completions"
 */
export const chatFrontDoor: FrontDoor = {
  name: "chat",
  protocol: Protocol.CHAT,
  path: "/v1/chat/completions",
  engineErrorBody: passEngineError,
  parse: parseHidingStrings,
  prepare(body) {
    const model = requireModel(body);
    const stream = streamFlag(body);
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      throw new ProxyHttpError(400, "messages: required, a non-empty array of chat messages", "invalid_request_error", "invalid_value", "messages");
    }
    return {
      capture: "chat",
      upstreamPath: "/v1/chat/completions",
      model,
      stream,
      upstreamBody: body,
      passthrough: true,
      wants: harnessWants("chat", body),
      errorBody: openAiDoorError,
    };
  },
};
