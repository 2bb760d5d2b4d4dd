/**
 * A minimal incremental Server-Sent Events decoder (the subset LLM servers use:
 * `event:` and `data:` fields, blank-line separated, `\n` or `\r\n` line ends).
 */

export interface SseMessage {
  event?: string;
  data: string;
}

export interface SseDecoder {
  /** Feed decoded text; returns the messages completed by it. */
  push(text: string): SseMessage[];
  /** Messages left when the stream ends without a trailing blank line. */
  flush(): SseMessage[];
}

/**
 * Create an SSE decoder; text may be split anywhere, even mid-line.
 *
 * @example
 * const d = createSseDecoder();
 * d.push('data: {"a":1}\n'); // []
 * d.push("\ndata: [DONE]\n\n"); // [{ data: '{"a":1}' }, { data: "[DONE]" }]
 */
export function createSseDecoder(): SseDecoder {
  let buffer = "";
  let event: string | undefined;
  let data: string[] = [];

  const line = (l: string, out: SseMessage[]) => {
    if (l === "") {
      if (data.length > 0) out.push(event === undefined ? { data: data.join("\n") } : { event, data: data.join("\n") });
      event = undefined;
      data = [];
      return;
    }
    if (l.startsWith(":")) return; // comment / keep-alive
    const colon = l.indexOf(":");
    const field = colon === -1 ? l : l.slice(0, colon);
    let value = colon === -1 ? "" : l.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
    else if (field === "event") event = value;
  };

  return {
    push(text) {
      buffer += text;
      const out: SseMessage[] = [];
      let nl = buffer.indexOf("\n");
      while (nl !== -1) {
        let l = buffer.slice(0, nl);
        if (l.endsWith("\r")) l = l.slice(0, -1);
        buffer = buffer.slice(nl + 1);
        line(l, out);
        nl = buffer.indexOf("\n");
      }
      return out;
    },
    flush() {
      const out: SseMessage[] = [];
      if (buffer !== "") line(buffer, out);
      buffer = "";
      line("", out);
      return out;
    },
  };
}
