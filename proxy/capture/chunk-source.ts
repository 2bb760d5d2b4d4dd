/**
 * A streamed Chat answer the proxy writes itself (token-in mode's derendered completion),
 * handed to the pipeline as chunk objects beside the Response that carries it as SSE bytes.
 *
 * The pipeline reads an engine's Chat stream as text: each event decoded, parsed, stripped of
 * what the harness did not ask for and serialised again. For an answer the proxy made from
 * objects that was a second JSON round trip per chunk (serialised by the maker, parsed by the
 * pipeline), plus a TransformStream between them: ~17 % of token-in mode's samples
 * (docs/performance.md). With a source the pipeline takes the objects as they are and
 * serialises each once; the Response's own body is the same answer as bytes, for any reader
 * that is not the pipeline. Whichever is read first consumes the answer.
 */

/** One read's events, in order: a chunk object, or an event's data as text (`[DONE]`, a line that is not JSON). */
export type ChunkItem = Record<string, unknown> | string;

export interface ChunkBatch {
  items: ChunkItem[];
  /** The upstream bytes read for them (the proxy's stream size limit counts these). */
  bytes: number;
}

export interface ChunkSource {
  /** The next events; done once the upstream ended (the source has then flushed its last events). */
  read(): Promise<{ done: true; value?: undefined } | { done: false; value: ChunkBatch }>;
  /** Stops reading the upstream. */
  cancel(reason?: unknown): void;
}

const SOURCE = Symbol("forge.chunkSource");
const encoder = new TextEncoder();

/**
 * A `text/event-stream` Response for `source`, which the pipeline reads as objects
 * (`chunkSourceOf`) and anything else as the bytes `serialise` writes for each item.
 *
 * @example
 * return withChunkSource(source, (item) => `data: ${typeof item === "string" ? item : JSON.stringify(item)}\n\n`, headers);
 */
export function withChunkSource(source: ChunkSource, serialise: (item: ChunkItem) => string, headers: Record<string, string>): Response {
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = await source.read();
        if (next.done) return controller.close();
        const text = next.value.items.map(serialise).join("");
        if (text !== "") controller.enqueue(encoder.encode(text));
      },
      cancel: (reason) => source.cancel(reason),
    },
    // Nothing is read before a reader asks: the pipeline may take the objects instead.
    { highWaterMark: 0 },
  );
  const response = new Response(body, { status: 200, headers });
  (response as unknown as { [SOURCE]: ChunkSource })[SOURCE] = source;
  return response;
}

/**
 * A `text/event-stream` Response that carries `source` for the pipeline alone, with no body:
 * what the pipeline reads as objects needs no byte stream made beside it (a ReadableStream
 * and its Response cost ~6 µs of a token-in call in the proxy, docs/performance.md). Only for
 * a caller that reads it with `chunkSourceOf`, which `takesChunkObjects` says the pipeline does.
 *
 * @example
 * return objectsOnly ? chunkSourceResponse(source, headers) : withChunkSource(source, serialise, headers);
 */
export function chunkSourceResponse(source: ChunkSource, headers: Record<string, string>): Response {
  const response = new Response(null, { status: 200, headers });
  (response as unknown as { [SOURCE]: ChunkSource })[SOURCE] = source;
  return response;
}

/**
 * Whether the pipeline reads a streamed answer the proxy made as chunk objects: unless the
 * harness asked for ids (then its prompt ids are written as the text made for them: the bytes).
 *
 * @example
 * takesChunkObjects({ tokenIds: false }) // true
 */
export function takesChunkObjects(wants: { tokenIds: boolean; sglext?: boolean }): boolean {
  return !wants.tokenIds && !wants.sglext;
}

/**
 * The chunk objects behind `response`, when the proxy made it with `withChunkSource` and its
 * body was not read; undefined for an upstream's own answer.
 *
 * @example
 * const chunks = chunkSourceOf(upstream); // token-in's answer: objects; an engine's: undefined
 */
export function chunkSourceOf(response: Response): ChunkSource | undefined {
  if (response.bodyUsed) return undefined;
  return (response as unknown as { [SOURCE]?: ChunkSource })[SOURCE];
}
