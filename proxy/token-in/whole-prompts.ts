/**
 * Whole prompts rendered before (docs/performance.md, issue 32): a call that starts a chain
 * renders its whole conversation through the chat template and encodes it; the rollouts of one
 * task (a GRPO group, a benchmark's conversations) start from the same messages, so the prompt is
 * kept, keyed by the identity of the preprocessed messages (model/'s preprocessing cache gives a
 * message sent again unchanged back as the same dict, and never changes a dict it gave out) and
 * the template variables. A template that reads the clock (`strftime_now`) is rendered every time.
 */
import type { Model, PreparedChat, PyDict } from "../../model/index.ts";

const MAX_IDS = 1024 * 1024;
const dictIds = new WeakMap<PyDict, number>();
let nextDictId = 1;
const templateIds = new WeakMap<PreparedChat["template"], number>();
const cache = new Map<string, Uint32Array>();
let heldIds = 0;

/**
 * The prompt ids of a prepared request rendered whole; `settings` is its settings key (keys.ts:
 * the tools and every template variable but add_generation_prompt).
 *
 * @example
 * wholePrompt(model, prepared, settingsKey(prepared)) // the ids of model.tokenizer.encode(model.renderPrepared(prepared))
 */
export function wholePrompt(model: Model, prepared: PreparedChat, settings: string): Uint32Array {
  const render = () => Uint32Array.from(model.tokenizer.encode(model.renderPrepared(prepared)));
  if (prepared.template.source.includes("strftime_now")) return render();
  let template = templateIds.get(prepared.template);
  if (template === undefined) templateIds.set(prepared.template, (template = nextDictId++));
  let key = `${template}\u0001${settings}\u0001${String(prepared.variables.get("add_generation_prompt"))}\u0001${prepared.continueFinalMessage}\u0001${model.spec.name}`;
  for (const message of prepared.conversation) {
    let id = dictIds.get(message);
    if (id === undefined) dictIds.set(message, (id = nextDictId++));
    key += `,${id}`;
  }
  const hit = cache.get(key);
  // A copy: the caller's chain may hold it.
  if (hit) return hit.slice();
  const ids = render();
  if (ids.length <= MAX_IDS / 4) {
    cache.set(key, ids);
    heldIds += ids.length;
    for (const [oldest, held] of cache) {
      if (heldIds <= MAX_IDS) break;
      cache.delete(oldest);
      heldIds -= held.length;
    }
  }
  return ids.slice();
}
