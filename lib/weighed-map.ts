/**
 * A map bounded by the total weight of what it holds (characters, bytes), the oldest entries
 * going first: the shard-wide caches a proxy keeps for its rollouts (proxy/token-in/).
 */

/**
 * Entries weighed when set; past `maxWeight` in all the oldest are dropped, and an entry
 * heavier than `maxEntryWeight` is not kept (it would push out many for one).
 *
 * @example
 * const texts = new WeighedMap<string, string>(4 * 1024 * 1024, 1024 * 1024);
 * texts.set("ro-1", text, text.length);
 * texts.take("ro-1"); // the text, no longer held
 */
export class WeighedMap<K, V> {
  private readonly entries = new Map<K, { value: V; weight: number }>();
  private total = 0;

  constructor(
    readonly maxWeight: number,
    readonly maxEntryWeight = maxWeight,
  ) {}

  get(key: K): V | undefined {
    return this.entries.get(key)?.value;
  }

  /** The value held for `key`, no longer held. */
  take(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    this.total -= entry.weight;
    return entry.value;
  }

  delete(key: K): void {
    this.take(key);
  }

  /** Holds `value` for `key` (in place of what it held), newest; the oldest go past `maxWeight`. */
  set(key: K, value: V, weight: number): void {
    this.delete(key);
    if (weight > this.maxEntryWeight) return;
    this.entries.set(key, { value, weight });
    this.total += weight;
    // The oldest first (a Map keeps insertion order); no iterator is made while under the bound.
    while (this.total > this.maxWeight && this.entries.size > 0) {
      const [oldest, entry] = this.entries.entries().next().value!;
      this.entries.delete(oldest);
      this.total -= entry.weight;
    }
  }

  /** The weight held in all. */
  get weight(): number {
    return this.total;
  }
}
