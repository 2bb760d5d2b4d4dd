/** `POST /v1/completions`: OpenAI (legacy) Completions, passed through. */
import { Protocol } from "../../schemas/index.ts";
import { ProxyHttpError } from "../errors.ts";
import { harnessWants } from "../capture/tokens.ts";
import type { FrontDoor } from "./types.ts";
import { openAiDoorError, passEngineError, requireModel, streamFlag } from "./openai-body.ts";

/**
 * The Completions front door.
 *
 * @example
 * completionsFrontDoor.prepare({ model: "m", prompt: "hi" }).capture // "completions"
 */
export const completionsFrontDoor: FrontDoor = {
  name: "completions",
  protocol: Protocol.COMPLETIONS,
  path: "/v1/completions",
  engineErrorBody: passEngineError,
  prepare(body) {
    const model = requireModel(body);
    const stream = streamFlag(body);
    const p = body.prompt;
    const ok = typeof p === "string" || (Array.isArray(p) && p.length > 0);
    if (!ok) {
      throw new ProxyHttpError(400, "prompt: required, a string, an array of strings or an array of token ids", "invalid_request_error", "invalid_value", "prompt");
    }
    if (Array.isArray(p) && p.length > 1 && !p.every((x) => typeof x === "number")) {
      // Several prompts give several calls' worth of tokens; a ModelCall records one.
      throw new ProxyHttpError(400, "prompt: the proxy records one prompt per call; send several prompts as several calls", "invalid_request_error", "invalid_value", "prompt");
    }
    // Token ids are stored as uint32: one outside that range would fail the record after the
    // upstream answered, so it is refused here (vLLM refuses ids outside its vocabulary anyway).
    const ids = Array.isArray(p) ? (p.length === 1 && Array.isArray(p[0]) ? p[0] : p) : [];
    const bad = ids.findIndex((x: unknown) => typeof x === "number" && !(Number.isInteger(x) && x >= 0 && x <= 0xffffffff));
    if (bad >= 0) {
      throw new ProxyHttpError(400, `prompt[${bad}]: a token id must be an integer from 0 to 4294967295, got ${ids[bad]}`, "invalid_request_error", "invalid_value", "prompt");
    }
    return {
      capture: "completions",
      upstreamPath: "/v1/completions",
      model,
      stream,
      upstreamBody: body,
      passthrough: true,
      wants: harnessWants("completions", body),
      errorBody: openAiDoorError,
    };
  },
};
