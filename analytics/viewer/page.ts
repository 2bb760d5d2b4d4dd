/**
 * The trajectory viewer: one static, self-contained HTML page per rollout. For each model call in
 * order: what the harness sent that was new, what the model answered (messages, tool calls, tool
 * results), its timings and token counts, and how assembly classified it (clean, realign = drift,
 * fork, broken; auxiliary labels when the trajectory carries them). Then each training sample's
 * tokens, shaded by mask (grey: context the policy did not sample) and logprob (sampled tokens,
 * paler the more likely). Everything a harness or a model wrote is escaped: the page runs no
 * recorded text.
 */
import type { ContentStore } from "../../records/index.ts";
import { CallStatus, Protocol, RolloutStatus, TokenStatus, type ModelCall, type Rollout, type RolloutResult } from "../../schemas/index.ts";
import { callImageRefs, requestMessages, responseMessage, type ChatMessage, type RolloutTrajectory } from "../../trajectories/index.ts";
import { escapeXml } from "../svg.ts";
import type { TokenTexter } from "./token-text.ts";

export type ViewerInput = {
  rolloutId: string;
  rollout: Rollout | undefined;
  result: RolloutResult | undefined;
  /** The rollout's calls in seq order. */
  calls: ModelCall[];
  /** Rebuilds the calls' request bodies (stored once per rollout, records/): `collectRollouts` gives it. */
  content: ContentStore;
  trajectory: RolloutTrajectory | undefined;
  /** Why the trajectory could not be assembled, if it could not. */
  trajectoryError?: string;
  text: TokenTexter;
  /** Link back to the report. */
  reportHref?: string;
};

/** At most this many tokens per strip: a 100k-token sample would make a page no browser opens. */
const tokenLimit = 6000;
/** Message text beyond this is cut (with a note): the page is for reading, the log keeps all. */
const textLimit = 6000;

const enumName = (names: { [value: number]: string }, value: number) => (names[value] ?? "UNSPECIFIED").toLowerCase();
const ms = (value: number) => (value >= 10_000 ? `${(value / 1000).toFixed(1)} s` : `${Math.round(value)} ms`);

function clipped(text: string): string {
  if (text.length <= textLimit) return escapeXml(text);
  return `${escapeXml(text.slice(0, textLimit))}<span class="cut">… ${text.length - textLimit} more characters</span>`;
}

/** The marker trajectories/ writes for an image part in a message's text (veRL's `<image>`). */
const IMAGE_MARKER = "<image>";

/** Image formats a browser shows from bytes; anything else (SVG, which can run script) is not embedded. */
function imageMime(bytes: Uint8Array): string | undefined {
  const starts = (...magic: number[]) => magic.every((byte, i) => bytes[i] === byte);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x47, 0x49, 0x46, 0x38)) return "image/gif";
  if (starts(0x52, 0x49, 0x46, 0x46) && bytes[8] === 0x57 && bytes[9] === 0x45 && bytes[10] === 0x42 && bytes[11] === 0x50) return "image/webp";
  return undefined;
}

/** An image of a request, embedded as a data: URL when its bytes are a raster image; named by its sha256. */
export type ShownImage = { sha256: string; bytes?: Uint8Array };

function imageHtml(image: ShownImage | undefined): string {
  if (!image) return `<span class="image-missing">[image]</span>`;
  const mime = image.bytes && imageMime(image.bytes);
  const name = `sha256 ${image.sha256.slice(0, 12)}…`;
  if (!mime) return `<span class="image-missing" data-sha256="${escapeXml(image.sha256)}">[image ${escapeXml(name)}: ${image.bytes ? "not a PNG, JPEG, GIF or WebP, not shown" : "bytes not recorded"}]</span>`;
  const data = Buffer.from(image.bytes!).toString("base64");
  return `<figure class="image" data-sha256="${escapeXml(image.sha256)}"><img alt="image ${escapeXml(name)}" src="data:${mime};base64,${data}"><figcaption>${escapeXml(name)} · ${image.bytes!.length} bytes</figcaption></figure>`;
}

/** A message's text with each image marker replaced by the next image of `images` (in request order). */
function contentHtml(text: string, images: () => ShownImage | undefined): string {
  if (!text.includes(IMAGE_MARKER)) return `<pre>${clipped(text)}</pre>`;
  return text
    .split(IMAGE_MARKER)
    .map((piece, i) => `${i > 0 ? imageHtml(images()) : ""}${piece ? `<pre>${clipped(piece)}</pre>` : ""}`)
    .join("");
}

function messageHtml(message: ChatMessage, images: () => ShownImage | undefined = () => undefined): string {
  const tools = (message.tool_calls ?? [])
    .map((call) => `<div class="tool-call" data-tool="${escapeXml(call.function.name)}"><span class="label">tool call</span> <b>${escapeXml(call.function.name)}</b> <code>${escapeXml(call.id)}</code><pre>${clipped(call.function.arguments)}</pre></div>`)
    .join("");
  const isResult = message.role === "tool";
  const body = message.content ? contentHtml(message.content, images) : "";
  const head = isResult ? `<span class="label">tool result</span> <code>${escapeXml(message.tool_call_id ?? "")}</code>` : `<span class="label">${escapeXml(message.role)}</span>`;
  return `<div class="message${isResult ? " tool-result" : ""}" data-role="${escapeXml(message.role)}">${head}${body}${tools}</div>`;
}

function safeMessages(read: () => ChatMessage[]): { messages: ChatMessage[]; error?: string } {
  try {
    return { messages: read() };
  } catch (error) {
    return { messages: [], error: (error as Error).message };
  }
}

/**
 * One strip of tokens: each a span with its text, mask and logprob; sampled tokens shaded by
 * probability (white: certain, red: unlikely), context tokens grey.
 */
function tokenStrip(ids: readonly number[], mask: readonly number[] | null, logprobs: readonly number[], text: TokenTexter, callStarts: Map<number, string> = new Map()): string {
  const shown = ids.slice(0, tokenLimit);
  const pieces = text(shown);
  const spans = shown.map((id, i) => {
    const sampled = mask === null ? true : mask[i] === 1;
    const lp = logprobs[i] ?? 0;
    const p = Math.exp(lp);
    const style = sampled ? ` style="background:hsl(0,85%,${Math.round(55 + 45 * p)}%)"` : "";
    const start = callStarts.get(i);
    const marker = start ? `<span class="call-start" title="call ${escapeXml(start)}">▸${escapeXml(start)}</span>` : "";
    const title = sampled ? `id ${id} · logprob ${lp.toFixed(3)} · p ${p.toFixed(3)}` : `id ${id} · context (mask 0)`;
    return `${marker}<span class="token${sampled ? " sampled" : ""}" data-mask="${sampled ? 1 : 0}" data-logprob="${lp}"${style} title="${title}">${escapeXml(pieces[i] ?? "")}</span>`;
  });
  const more = ids.length > tokenLimit ? `<span class="cut">… ${ids.length - tokenLimit} more tokens</span>` : "";
  return `<div class="tokens">${spans.join("")}${more}</div>`;
}

/** Fields a newer trajectory format may add to a call's classification (auxiliary labels, roles): shown as they come. */
function extraLabels(entry: { [key: string]: unknown } | undefined): [string, string][] {
  if (!entry) return [];
  return Object.entries(entry)
    .filter(([key, value]) => !["call_id", "seq", "kind", "sample"].includes(key) && value !== undefined && value !== null && value !== false)
    .map(([key, value]) => [key, typeof value === "string" ? value : JSON.stringify(value)]);
}

function timeline(calls: ModelCall[], start: number, end: number): string {
  const span = Math.max(1, end - start);
  const bars = calls
    .map((call) => {
      const left = ((call.startUnixMs - start) / span) * 100;
      const width = Math.max(0.3, ((call.endUnixMs - call.startUnixMs) / span) * 100);
      return `<div class="bar" data-seq="${call.seq}" style="left:${left.toFixed(2)}%;width:${width.toFixed(2)}%" title="call ${call.seq}: ${ms(call.endUnixMs - call.startUnixMs)}"></div>`;
    })
    .join("");
  return `<div class="timeline" title="model calls over the rollout's time">${bars}</div>`;
}

type CallKind = { [key: string]: unknown } & { kind: string; sample: number };
type BrokenNote = NonNullable<ViewerInput["trajectory"]>["broken"][number];

/** One card per call; each shows only what is new since the last call when its request repeats the history. */
function callCards(calls: ModelCall[], content: ViewerInput["content"], text: TokenTexter, kinds: Map<string, CallKind>, broken: Map<string, BrokenNote>, start: number): string[] {
  let previous: ChatMessage[] = [];
  return calls.map((call) => {
    const request = safeMessages(() => requestMessages(call, content));
    const response = safeMessages(() => [responseMessage(call)]);
    const html = callCard(call, request, response, previous, { content, text, kind: kinds.get(call.callId), brokenNote: broken.get(call.callId), start });
    previous = [...request.messages, ...response.messages];
    return html;
  });
}

type Shown = ReturnType<typeof safeMessages>;

/** A call's card: its facts, errors, the fresh part of its request (with its images), its answer and completion tokens. */
function callCard(call: ModelCall, request: Shown, response: Shown, previous: ChatMessage[], at: { content: ViewerInput["content"]; text: TokenTexter; kind: CallKind | undefined; brokenNote: BrokenNote | undefined; start: number }): string {
  const { content, text, kind, brokenNote, start } = at;
  // Only what is new since the last call: its request repeats the history when nothing was rewritten.
  const hadPrevious = previous.length > 0;
  const continues = hadPrevious && previous.length <= request.messages.length && previous.every((m, i) => JSON.stringify(m) === JSON.stringify(request.messages[i]));
  const fresh = continues ? request.messages.slice(previous.length) : request.messages;
  // The request's images in order, one per marker of its messages; the fresh messages show theirs.
  const markers = (messages: ChatMessage[]) => messages.reduce((n, m) => n + (m.content.split(IMAGE_MARKER).length - 1), 0);
  let refs: ReturnType<typeof callImageRefs> = { refs: [], urls: 0, bytes: new Map() };
  try {
    refs = callImageRefs(call, content);
  } catch {
    // An unreadable body is reported by requestMessages' error already.
  }
  const aligned = markers(request.messages) === refs.refs.length;
  let nextImage = aligned ? markers(request.messages.slice(0, request.messages.length - fresh.length)) : refs.refs.length;
  const takeImage = (): ShownImage | undefined => {
    const sha256 = refs.refs[nextImage++];
    return sha256 ? { sha256, bytes: refs.bytes.get(sha256) } : undefined;
  };
  // Markers that cannot be matched to the request's images (text that spells "<image>"): its images listed after it.
  const unmatched = aligned ? "" : refs.refs.length > 0 ? `<div class="images-unmatched"><span class="label">images of this request</span>${[...new Set(refs.refs)].map((sha256) => imageHtml({ sha256, bytes: refs.bytes.get(sha256) })).join("")}</div>` : "";
  const labels = extraLabels(kind);
  const aux = labels.some(([key, value]) => /aux|role/i.test(key) && !/^(agent|main|false)$/i.test(value));
  const classes = ["call", kind?.kind === "fork" ? "fork-point" : "", kind?.kind === "realign" ? "drift-point" : "", kind?.kind === "broken" ? "broken" : "", aux ? "aux" : ""].filter(Boolean).join(" ");
  const usage = call.usage;
  const facts = [
    `${escapeXml(enumName(Protocol, call.protocol).replace("protocol_", ""))}${call.stream ? " · stream" : ""}`,
    escapeXml(call.model),
    `+${ms(call.startUnixMs - start)}`,
    `latency ${ms(call.latencyMs)}`,
    call.ttftMs > 0 ? `ttft ${ms(call.ttftMs)}` : "",
    usage ? `${usage.promptTokens} prompt + ${usage.completionTokens} completion tokens` : "no usage",
    `status ${escapeXml(enumName(CallStatus, call.status).replace("call_status_", ""))}`,
    `tokens ${escapeXml(enumName(TokenStatus, call.tokenStatus).replace("token_status_", ""))}`,
    call.finishReason ? `finish ${escapeXml(call.finishReason)}` : "",
  ].filter(Boolean);
  const kindBadge = kind ? `<span class="kind kind-${escapeXml(kind.kind)}">${escapeXml(kind.kind)}${kind.kind === "fork" ? `: new sample ${kind.sample}` : ` · sample ${kind.sample}`}</span>` : "";
  const labelBadges = labels.map(([key, value]) => `<span class="kind aux-label" data-label="${escapeXml(key)}">${escapeXml(key)}: ${escapeXml(value)}</span>`).join("");
  const errors = [request.error, response.error, brokenNote ? `broken: ${brokenNote.reason}` : "", call.error ? `error: ${call.error}` : ""].filter(Boolean);
  const completion = call.completionTokenIds.length
    ? `<details><summary>completion tokens (${call.completionTokenIds.length})</summary>${tokenStrip(call.completionTokenIds, null, call.completionLogprobs, text)}</details>`
    : "";
  return `<section class="${classes}" id="call-${call.seq}" data-seq="${call.seq}" data-call-id="${escapeXml(call.callId)}">
<h3>call ${call.seq} ${kindBadge}${labelBadges}</h3>
<p class="facts">${facts.join(" · ")}</p>
${errors.map((e) => `<p class="error">${escapeXml(e ?? "")}</p>`).join("")}
${continues || !hadPrevious ? "" : `<p class="note">history rewritten (not the previous request and answer followed by new messages): the whole request is shown</p>`}
<div class="request">${fresh.map((message) => messageHtml(message, takeImage)).join("")}${unmatched}</div>
<div class="response">${response.messages.map((message) => messageHtml(message)).join("")}</div>
${completion}
</section>`;
}

/** A training sample: its facts and its response tokens, each call's completion marked where it starts. */
function sampleSection(sample: NonNullable<ViewerInput["trajectory"]>["samples"][number], calls: ModelCall[], text: TokenTexter): string {
  // Each run of sampled tokens is one call's completion, in the order of call_ids.
  const callStarts = new Map<number, string>();
  let callIndex = 0;
  sample.response_mask.forEach((m, i) => {
    if (m === 1 && (i === 0 || sample.response_mask[i - 1] !== 1)) {
      const id = sample.call_ids[callIndex++];
      const seq = calls.find((c) => c.callId === id)?.seq;
      if (seq !== undefined) callStarts.set(i, String(seq));
    }
  });
  const aux = extraLabels(sample as unknown as { [key: string]: unknown }).filter(([key]) => /aux|role/i.test(key));
  return `<section class="sample" data-sample="${sample.sample_index}">
<h3>sample ${sample.sample_index}${sample.is_final ? " (final)" : ""} ${aux.map(([k, v]) => `<span class="kind aux-label">${escapeXml(k)}: ${escapeXml(v)}</span>`).join("")}</h3>
<p class="facts">reward ${sample.reward} · ${sample.call_ids.length} call(s) · ${sample.prompt_ids.length} prompt + ${sample.response_ids.length} response tokens (${sample.response_mask.filter((m) => m === 1).length} sampled) · realigns ${sample.realigns} · drift ${sample.drift_tokens} tokens · policy ${sample.policy_versions.join(", ")}</p>
${tokenStrip(sample.response_ids, sample.response_mask, sample.response_logprobs, text, callStarts)}
</section>`;
}

const PAGE_STYLE = `body { font-family: system-ui, sans-serif; margin: 20px; color: #222; max-width: 1100px; }
pre { white-space: pre-wrap; word-break: break-word; background: #f7f7f7; padding: 6px; margin: 4px 0; font-size: 12px; }
.call { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; margin: 10px 0; }
.call.fork-point { border-left: 6px solid #e15759; }
.call.drift-point { border-left: 6px solid #f28e2b; }
.call.broken { border-left: 6px solid #888; background: #fafafa; }
.call.aux { background: #f5f7ff; }
.facts { color: #555; font-size: 12px; margin: 2px 0; }
.error { color: #b00; font-size: 12px; }
.note { color: #a60; font-size: 12px; }
.label { font-size: 11px; text-transform: uppercase; color: #666; }
.message { margin: 6px 0; }
.message[data-role=assistant] { border-left: 3px solid #4e79a7; padding-left: 6px; }
.tool-call { border-left: 3px solid #59a14f; padding-left: 6px; margin: 4px 0; }
.tool-result { border-left: 3px solid #bab0ac; padding-left: 6px; }
.kind { font-size: 11px; background: #eee; border-radius: 3px; padding: 1px 5px; margin-left: 6px; font-weight: normal; }
.kind-fork { background: #fbd3d4; } .kind-realign { background: #fde2c8; } .kind-broken { background: #ddd; }
.tokens { font-family: ui-monospace, monospace; font-size: 12px; line-height: 1.6; white-space: pre-wrap; word-break: break-all; border: 1px solid #eee; padding: 6px; }
.token { border-right: 1px solid rgba(0,0,0,0.06); }
.token[data-mask="0"] { color: #888; }
.call-start { font-size: 10px; color: #fff; background: #4e79a7; border-radius: 2px; padding: 0 2px; margin: 0 1px; }
.cut { color: #a60; font-style: italic; }
.timeline { position: relative; height: 18px; background: #f2f2f2; margin: 8px 0 16px; border-radius: 3px; }
.timeline .bar { position: absolute; top: 2px; height: 14px; background: #4e79a7; border-radius: 2px; }
.legend span { display: inline-block; padding: 0 6px; margin-right: 6px; font-size: 12px; }
figure.image { margin: 6px 0; }
figure.image img { max-width: 640px; border: 1px solid #ccc; display: block; }
figure.image figcaption, .image-missing { font-size: 11px; color: #666; }
`;

/**
 * The viewer page of one rollout.
 *
 * @example
 * await Bun.write("r-1.html", renderRolloutPage({ rolloutId: "r-1", rollout, result, calls, trajectory, text: idTexter }));
 */
export function renderRolloutPage(input: ViewerInput): string {
  const { rolloutId, rollout, result, calls, trajectory, text, content } = input;
  const kinds = new Map((trajectory?.kinds ?? []).map((k) => [k.call_id, k as unknown as { [key: string]: unknown } & { kind: string; sample: number }]));
  const broken = new Map((trajectory?.broken ?? []).map((b) => [b.call_id, b]));
  const start = rollout?.createdUnixMs || calls[0]?.startUnixMs || 0;
  const end = Math.max(result?.finishedUnixMs ?? 0, ...calls.map((c) => c.endUnixMs), start + 1);
  const status = result ? enumName(RolloutStatus, result.status).replace("rollout_status_", "") : "unfinished";

  const cards = callCards(calls, content, text, kinds, broken, start);
  const samples = (trajectory?.samples ?? []).map((sample) => sampleSection(sample, calls, text));

  const stats = trajectory?.stats;
  const summary = [
    `status <b class="status-${escapeXml(status)}">${escapeXml(status)}</b>`,
    `reward ${result ? result.reward : "n/a"}`,
    `${calls.length} call(s)`,
    `time ${ms(end - start)}`,
    stats ? `samples ${trajectory!.samples.length} · clean ${stats.clean} · realign ${stats.realign} · fork ${stats.fork} · broken ${stats.broken} · drift ${stats.drift_tokens} tokens` : "no trajectory",
  ];
  const title = `rollout ${rolloutId}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeXml(title)}</title>
<style>
${PAGE_STYLE}</style></head>
<body>
<p>${input.reportHref ? `<a href="${escapeXml(input.reportHref)}">← report</a>` : ""}</p>
<header id="rollout-header">
<h1>${escapeXml(title)}</h1>
<p class="facts">task <b>${escapeXml(rollout?.taskId ?? "?")}</b> · attempt ${rollout?.attempt ?? "?"} · experiment ${escapeXml(rollout?.experiment ?? "?")} · iteration ${rollout?.iteration ?? "?"} · harness ${escapeXml(rollout?.harness ?? "?")} · started ${rollout?.createdUnixMs ? new Date(rollout.createdUnixMs).toISOString() : "n/a"}</p>
<p>${summary.join(" · ")}</p>
${input.trajectoryError ? `<p class="error">trajectory: ${escapeXml(input.trajectoryError)}</p>` : ""}
${result?.error ? `<p class="error">${escapeXml(result.error)}</p>` : ""}
${result ? `<details${result.reward > 0 && result.status === RolloutStatus.OK ? "" : " open"}><summary>verifier output</summary><pre id="verifier-output">${clipped(result.verifierOutput)}</pre></details>` : ""}
</header>
${timeline(calls, start, end)}
<p class="legend"><span style="border-left:6px solid #e15759">fork: a new sample starts</span><span style="border-left:6px solid #f28e2b">realign: reasoning stripped, drift</span><span style="border-left:6px solid #888">broken: no token ids</span><span style="background:hsl(0,85%,60%)">unlikely sampled token</span><span style="background:hsl(0,85%,98%)">likely sampled token</span><span style="color:#888">context (mask 0)</span></p>
<h2>Calls</h2>
${cards.join("\n") || "<p>no model calls recorded</p>"}
<h2>Samples</h2>
${samples.join("\n") || "<p>no training sample (n/a)</p>"}
</body></html>
`;
}
