/**
 * Each rollout's last call's messages (model/preprocess.ts, `PreviousMessages`), for its next
 * call: a harness resends the whole history on every call, and a message the same as the one at
 * its place last time is taken as it was preprocessed, with no JSON text written for it
 * (docs/performance.md, issue 32).
 *
 * Shared by the shard's rollouts and bounded by the characters of the messages held (MAX_CHARS;
 * their strings are mostly the ones model/'s preprocessing cache holds too): the rollouts used
 * longest ago go first, and a rollout whose messages went preprocesses its next call through the
 * cache, as before. A finished rollout's go when they are the oldest.
 */
import { noPreviousMessages, type PreviousMessages } from "../../model/index.ts";
import { WeighedMap } from "../../lib/index.ts";

const MAX_CHARS = 4 * 1024 * 1024;
const held = new WeighedMap<string, PreviousMessages>(MAX_CHARS, MAX_CHARS / 4);

/**
 * The rollout's last call's messages (empty at its first call, or when they went), to pass to
 * `model.prepare` and then to `heldMessages`.
 *
 * @example
 * const previous = previousMessages(rolloutId);
 * const prepared = model.prepare(chat, previous);
 * heldMessages(rolloutId, previous);
 */
export function previousMessages(rolloutId: string): PreviousMessages {
  // Taken out while the call prepares: a concurrent call of the rollout starts from none.
  return held.take(rolloutId) ?? noPreviousMessages();
}

/** Holds the rollout's messages (as `model.prepare` left them) for its next call, dropping the oldest rollouts' past the bound. */
export function heldMessages(rolloutId: string, previous: PreviousMessages): void {
  held.set(rolloutId, previous, previous.chars.reduce((n, c) => n + c, 0));
}
