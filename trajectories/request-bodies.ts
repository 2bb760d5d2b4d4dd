/**
 * A rollout's request bodies as export reads them: each rebuilt from the rollout's content store
 * (stored bodies: docs/record-format.md) and JSON-parsed at most once, then shared by what
 * needs it — the auxiliary fingerprints' view, the prompt messages of a sample's first call and
 * the images of its last call. One per rollout, dropped with it.
 */
import { requestBodyOf, type ContentStore } from "../records/index.ts";
import type { ModelCall } from "../schemas/index.ts";
import { bodyImageRefs, type ImageRefs } from "./images.ts";
import { requestMessagesOfBody, type ChatMessage } from "./messages.ts";
import { requestViewOfBody, type RequestView } from "./request-view.ts";

type Json = any; // request bodies are harness JSON: read defensively

const decoder = new TextDecoder();
const noImages = (): ImageRefs => ({ refs: [], urls: 0, bytes: new Map() });

export class RequestBodies {
  /** Parsed bodies (or why a body could not be read), by call. */
  private readonly parsed = new Map<ModelCall, { json: Json } | { error: Error }>();
  private readonly views = new Map<ModelCall, RequestView | undefined>();

  /** `content`: the rollout's store (`CollectedRollout.content`); without one a call's own `requestBody` is its body. */
  constructor(private readonly content?: ContentStore) {}

  /** The body's bytes, rebuilt (not kept: the agent's calls are only searched for fingerprints). Throws when it cannot be rebuilt. */
  bytes(call: ModelCall): Uint8Array {
    return this.content ? requestBodyOf(call, this.content) : call.requestBody;
  }

  /** The parsed body. Throws, naming the call, when it cannot be rebuilt or is not JSON. */
  json(call: ModelCall, text?: string): Json {
    let entry = this.parsed.get(call);
    if (!entry) {
      try {
        const source = text ?? decoder.decode(this.bytes(call));
        try {
          entry = { json: JSON.parse(source) };
        } catch {
          entry = { error: new Error(`call ${call.callId} (rollout ${call.rolloutId}): request_body is not JSON`) };
        }
      } catch (error) {
        entry = { error: error instanceof Error ? error : new Error(String(error)) };
      }
      this.parsed.set(call, entry);
    }
    if ("error" in entry) throw entry.error;
    return entry.json;
  }

  /** The conversation the call sent (`requestMessages`). Throws when its body cannot be read. */
  messages(call: ModelCall): ChatMessage[] {
    const messages = requestMessagesOfBody(call.protocol, this.json(call));
    if (!messages) throw new Error(`call ${call.callId}: protocol ${call.protocol} has no message form`);
    return messages;
  }

  /** What auxiliary recognition needs of the request, or undefined (see `requestView`); an unreadable body has none. */
  view(call: ModelCall): RequestView | undefined {
    if (!this.views.has(call)) {
      let view: RequestView | undefined;
      try {
        view = requestViewOfBody(call, () => this.json(call));
      } catch {
        view = undefined;
      }
      this.views.set(call, view);
    }
    return this.views.get(call);
  }

  /** The images of the call's request (`bodyImageRefs`); a body that cannot be read has none. */
  images(call: ModelCall): ImageRefs {
    try {
      if (this.parsed.has(call)) return bodyImageRefs(this.json(call));
      const text = decoder.decode(this.bytes(call));
      // Most calls carry no image: those are not parsed here (an image part names its type).
      if (!text.includes("image")) return noImages();
      return bodyImageRefs(this.json(call, text));
    } catch {
      return noImages();
    }
  }

  /** Forgets the parsed bodies of every call but `keep` (the calls a rollout's rows still read). */
  keepOnly(keep: ReadonlySet<ModelCall>): void {
    for (const call of this.parsed.keys()) if (!keep.has(call)) this.parsed.delete(call);
  }
}
