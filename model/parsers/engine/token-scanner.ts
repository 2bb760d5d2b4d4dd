/**
 * vLLM 0.33.0's token-id scanner (`vllm/parser/engine/token_id_scanner.py`): while streaming,
 * the grammar's marker tokens (`<think>`, `</think>`, `<tool_call>`, `</tool_call>`) and the
 * special tokens it drops are recognised by token id, not by text; the delta text is split
 * around them, and a marker whose text the detokenizer has not released yet waits for it.
 * Written from that source, with its token counting: each text item carries the texts of its
 * tokens (decoded one by one) and how many tokens it holds, for the reasoning-token count
 * (`usage.completion_tokens_details.reasoning_tokens`); a terminal holds none.
 */
export const DROP = "__DROP__";

export type ScanItem = { kind: "text"; text: string; tokenTexts: readonly string[]; tokenCount: number } | { kind: "terminal"; terminal: string; id: number; text: string };

export interface TokenScanner {
  readonly hasDeferred: boolean;
  scan(deltaText: string, deltaIds: readonly number[]): ScanItem[];
  flushPending(): ScanItem[];
  reset(): void;
}

/**
 * @param terminals token id → terminal name (the grammar's markers, DROP for other special tokens)
 * @param decodeToken the text of one token, special tokens kept
 * @param cache the texts decoded so far (the tokenizer's, shared by its scanners; a new one by default)
 */
export function tokenScanner(terminals: ReadonlyMap<number, string>, decodeToken: (id: number) => string, cache: Map<number, string> = new Map()): TokenScanner {
  return new IdTokenScanner(terminals, decodeToken, cache);
}

type Terminal = Extract<ScanItem, { kind: "terminal" }>;

const NO_TEXTS: readonly string[] = [];
const text = (t: string, tokenCount = 0, tokenTexts: readonly string[] = NO_TEXTS): ScanItem => ({ kind: "text", text: t, tokenTexts, tokenCount });
const joined = (items: ScanItem[]) => items.map((i) => i.text).join("");

/** The scanner's state: terminals whose text has not come yet, with the token counts and text around them. */
class IdTokenScanner implements TokenScanner {
  private deferred: Terminal[] = [];
  private deferredPrefixCounts: number[] = [];
  private deferredTrailingCount = 0;
  private deferredPostText = "";

  constructor(
    private readonly terminals: ReadonlyMap<number, string>,
    private readonly decodeToken: (id: number) => string,
    private readonly cache: Map<number, string>,
  ) {}

  get hasDeferred(): boolean {
    return this.deferred.length > 0;
  }

  scan(deltaText: string, deltaIds: readonly number[]): ScanItem[] {
    const terminals = this.terminals;
    let prefix: ScanItem[] = [];
    let effective = deltaText;
    let trailing = 0;
    if (this.deferred.length > 0) [prefix, effective, trailing] = this.resolveDeferred(deltaText, deltaIds.length);
    if (terminals.size === 0 || !deltaIds.some((id) => terminals.has(id))) {
      if (effective) prefix.push(text(effective, trailing + deltaIds.length, this.decodeAll(deltaIds)));
      return prefix;
    }
    let results = this.split(deltaIds);
    if (trailing) results.unshift(text("", trailing));
    if (effective) results = this.recoverHoldback(effective, results);
    else {
      // No text to check against yet: the terminals wait for the text before them.
      let prefixCount = 0;
      for (const r of results) {
        if (r.kind === "text") prefixCount += r.tokenCount;
        else {
          this.deferred.push(r);
          this.deferredPrefixCounts.push(prefixCount);
          prefixCount = 0;
        }
      }
      this.deferredTrailingCount += prefixCount;
      results = [];
    }
    return [...prefix, ...results];
  }

  flushPending(): ScanItem[] {
    if (this.deferred.length === 0 && !this.deferredPostText) return [];
    const results: ScanItem[] = [];
    if (this.deferredPostText) {
      results.push(text(this.deferredPostText, this.deferredPrefixCounts[0] ?? 0));
      this.deferredPostText = "";
    }
    results.push(...this.deferred);
    if (this.deferredTrailingCount) results.push(text("", this.deferredTrailingCount));
    this.deferred = [];
    this.deferredPrefixCounts = [];
    this.deferredTrailingCount = 0;
    return results;
  }

  reset(): void {
    this.deferred = [];
    this.deferredPrefixCounts = [];
    this.deferredTrailingCount = 0;
    this.deferredPostText = "";
  }

  private decode(id: number): string {
    let decoded = this.cache.get(id);
    if (decoded === undefined) {
      decoded = this.decodeToken(id);
      this.cache.set(id, decoded);
    }
    return decoded;
  }

  private decodeAll(ids: readonly number[]): string[] {
    return ids.map((id) => this.decode(id));
  }

  /** The ids as text runs (decoded token by token) and terminals. */
  private split(deltaIds: readonly number[]): ScanItem[] {
    const results: ScanItem[] = [];
    let accum: string[] = [];
    const flushText = () => {
      const joinedText = accum.join("");
      if (joinedText) results.push(text(joinedText, accum.length, accum));
      accum = [];
    };
    for (const id of deltaIds) {
      const terminal = this.terminals.get(id);
      if (terminal !== undefined) {
        flushText();
        results.push({ kind: "terminal", terminal, id, text: this.decode(id) });
      } else accum.push(this.decode(id));
    }
    flushText();
    return results;
  }

  private resolveDeferred(deltaText: string, currentCount: number): [ScanItem[], string, number] {
    const pending = this.deferred;
    const prefixCounts = this.deferredPrefixCounts;
    let trailing = this.deferredTrailingCount;
    this.deferred = [];
    this.deferredPrefixCounts = [];
    this.deferredTrailingCount = 0;
    const results: ScanItem[] = [];
    let remaining = deltaText;
    if (this.deferredPostText) {
      remaining = this.deferredPostText + remaining;
      this.deferredPostText = "";
    }
    pending.forEach((terminal, i) => {
      let prefixCount = prefixCounts[i]!;
      const pos = remaining.indexOf(terminal.text);
      if (pos > 0) {
        results.push(text(remaining.slice(0, pos), prefixCount), terminal);
        remaining = remaining.slice(pos + terminal.text.length);
      } else if (pos === 0) {
        results.push(terminal);
        remaining = remaining.slice(terminal.text.length);
      } else {
        // Only the terminal's text gives a reliable split point: keep the text until it comes.
        if (remaining) {
          this.deferredPostText += remaining;
          prefixCount += currentCount;
          remaining = "";
        }
        this.deferred.push(terminal);
        this.deferredPrefixCounts.push(prefixCount);
      }
    });
    if (this.deferred.length > 0) {
      this.deferredTrailingCount = trailing;
      trailing = 0;
    }
    return [results, remaining, trailing];
  }

  private rebuildFromAnchors(deltaText: string, results: ScanItem[]): ScanItem[] {
    const anchors = results.filter((i): i is Terminal => i.kind === "terminal");
    if (anchors.length === 0) return [text(deltaText)];
    const counts = new Array<number>(anchors.length + 1).fill(0);
    const texts: string[][] = Array.from({ length: anchors.length + 1 }, () => []);
    let group = 0;
    for (const item of results) {
      if (item.kind === "terminal") group++;
      else {
        counts[group]! += item.tokenCount;
        for (const t of item.tokenTexts) texts[group]!.push(t);
      }
    }
    // Right to left: each anchor takes the rightmost occurrence before the next one.
    const positions = new Array<number>(anchors.length).fill(-1);
    let searchEnd = deltaText.length;
    for (let i = anchors.length - 1; i >= 0; i--) {
      const pos = searchEnd - anchors[i]!.text.length < 0 ? -1 : deltaText.lastIndexOf(anchors[i]!.text, searchEnd - anchors[i]!.text.length);
      if (pos >= 0) {
        positions[i] = pos;
        searchEnd = pos;
      }
    }
    const out: ScanItem[] = [];
    let consumed = 0;
    anchors.forEach((anchor, i) => {
      const pos = positions[i]!;
      if (pos >= consumed) {
        if (pos > consumed) out.push(text(deltaText.slice(consumed, pos), counts[i]!, texts[i]!));
        out.push(anchor);
        consumed = pos + anchor.text.length;
      } else {
        const laterValid = positions.slice(i + 1).some((p) => p >= 0);
        // A dropped token's text may never come (the detokenizer stripped it): do not wait for it.
        if (!laterValid && consumed < deltaText.length && anchor.terminal !== DROP) {
          this.deferredPostText += deltaText.slice(consumed);
          consumed = deltaText.length;
        }
        this.deferred.push(anchor);
        this.deferredPrefixCounts.push(counts[i]!);
      }
    });
    if (consumed < deltaText.length) out.push(text(deltaText.slice(consumed), counts.at(-1)!, texts.at(-1)!));
    return out;
  }

  private recoverHoldback(deltaText: string, results: ScanItem[]): ScanItem[] {
    if (results.length === 0) return [text(deltaText)];
    const reconstructed = joined(results);
    if (!reconstructed) return [text(deltaText), ...results];
    const pos = deltaText.indexOf(reconstructed);
    if (pos > 0) return [text(deltaText.slice(0, pos)), ...results];
    if (pos === 0) return results;
    return this.rebuildFromAnchors(deltaText, results);
  }
}
