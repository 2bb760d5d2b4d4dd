/**
 * The site server of a browser task: serves the task's `site/` directory to the rollout and
 * records every request it gets (method, path, query, form fields, JSON body) to
 * `<state>/requests.jsonl`, a directory the harness never sees and only the verifier reads.
 * So the verifier checks what the agent did on the site (a form submitted, an item put in the
 * cart, a page reached) from outside the agent's reach: the agent can only send requests.
 *
 * It is forge's own code, run outside the sandbox; the task's files are served as bytes and never
 * run here. Any method is recorded; a GET or HEAD of a file answers the file, any other method
 * answers the file at its path when there is one (a form's action page), else `{"ok": true}`.
 */
import { appendFileSync, mkdirSync, realpathSync, statSync } from "node:fs";
import { join, resolve, sep } from "node:path";

/** One recorded request: a line of `requests.jsonl`. */
export type SiteRequest = {
  /** 1, 2, … in the order the server received them. */
  seq: number;
  time_unix_ms: number;
  method: string;
  /** The URL path, percent-decoded. */
  path: string;
  /** Query parameters (a repeated name keeps its last value; all of them are in `query_all`). */
  query: Record<string, string>;
  query_all?: Record<string, string[]>;
  user_agent: string;
  referer?: string;
  content_type?: string;
  /** `application/x-www-form-urlencoded` or `multipart/form-data` fields (files by name and size). */
  form?: Record<string, string>;
  form_all?: Record<string, string[]>;
  json?: unknown;
  /** Any other body as text, cut at 64 KiB. */
  text?: string;
  status: number;
};

export type SiteServer = {
  /** `http://127.0.0.1:PORT` (TCP) or undefined when listening on a unix socket. */
  url?: string;
  port?: number;
  /** The unix socket it listens on, when asked to. */
  socket?: string;
  /** The JSONL file of recorded requests. */
  log: string;
  close(): Promise<void>;
};

const BODY_LIMIT = 64 * 1024;

function fields(entries: Iterable<[string, string]>): { last: Record<string, string>; all: Record<string, string[]> } {
  const last: Record<string, string> = {};
  const all: Record<string, string[]> = {};
  for (const [key, value] of entries) {
    last[key] = value;
    (all[key] ??= []).push(value);
  }
  return { last, all };
}

/** The file under `root` a URL path names (a directory's index.html), or undefined; never outside root. */
function fileFor(root: string, path: string): string | undefined {
  const full = resolve(root, `.${path}`);
  if (full !== root && !full.startsWith(root + sep)) return undefined;
  let candidate = full;
  try {
    if (statSync(candidate).isDirectory()) candidate = join(candidate, "index.html");
    // A link inside site/ must not lead out of it.
    const real = realpathSync(candidate);
    if (real !== root && !real.startsWith(root + sep)) return undefined;
    return statSync(real).isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

async function readBody(request: Request): Promise<Pick<SiteRequest, "form" | "form_all" | "json" | "text">> {
  const type = request.headers.get("content-type") ?? "";
  if (request.body === null) return {};
  try {
    if (type.startsWith("application/x-www-form-urlencoded") || type.startsWith("multipart/form-data")) {
      const data = await request.formData();
      const { last, all } = fields([...data.entries()].map(([key, value]) => [key, typeof value === "string" ? value : `[file ${value.name}, ${value.size} bytes]`] as [string, string]));
      return Object.values(all).some((values) => values.length > 1) ? { form: last, form_all: all } : { form: last };
    }
    const text = await request.text();
    if (type.includes("json")) {
      try {
        return { json: JSON.parse(text) };
      } catch {
        // Not JSON after all: kept as text below.
      }
    }
    return text === "" ? {} : { text: text.length > BODY_LIMIT ? text.slice(0, BODY_LIMIT) : text };
  } catch (error) {
    return { text: `[unreadable body: ${(error as Error).message}]` };
  }
}

/**
 * Starts the site server on 127.0.0.1 (a free port, or `port`) or on a unix socket.
 *
 * @example
 * const site = await startSiteServer({ root: "tasks/shop/site", stateDir: "rollouts/r1/site" });
 * await fetch(`${site.url}/cart`, { method: "POST", body: new URLSearchParams({ item: "mug" }) });
 * await site.close(); // rollouts/r1/site/requests.jsonl holds the POST
 */
export async function startSiteServer(options: { root: string; stateDir: string; port?: number; socket?: string }): Promise<SiteServer> {
  const root = realpathSync(options.root);
  mkdirSync(options.stateDir, { recursive: true, mode: 0o700 });
  const log = join(options.stateDir, "requests.jsonl");
  appendFileSync(log, "");
  let seq = 0;
  const fetch = async (request: Request): Promise<Response> => {
    // A request without a Host header (HTTP/1.0, over the unix socket) has a relative URL.
    const url = new URL(request.url, "http://site.invalid");
    let path: string;
    try {
      path = decodeURIComponent(url.pathname);
    } catch {
      path = url.pathname;
    }
    const query = fields(url.searchParams.entries());
    const method = request.method.toUpperCase();
    const body = method === "GET" || method === "HEAD" ? {} : await readBody(request);
    const file = path.includes("\0") ? undefined : fileFor(root, path);
    const response = file ? new Response(Bun.file(file)) : method === "GET" || method === "HEAD" ? new Response("not found\n", { status: 404 }) : Response.json({ ok: true });
    const entry: SiteRequest = {
      seq: ++seq,
      time_unix_ms: Date.now(),
      method,
      path,
      query: query.last,
      ...(Object.values(query.all).some((values) => values.length > 1) ? { query_all: query.all } : {}),
      user_agent: request.headers.get("user-agent") ?? "",
      ...(request.headers.get("referer") ? { referer: request.headers.get("referer")! } : {}),
      ...(request.headers.get("content-type") ? { content_type: request.headers.get("content-type")! } : {}),
      ...body,
      status: response.status,
    };
    appendFileSync(log, `${JSON.stringify(entry)}\n`);
    // The agent's browser must see the site's current state, never a cached page.
    response.headers.set("cache-control", "no-store");
    return response;
  };
  // Whatever an agent sends must never take forge down: a request that breaks the handler is a 400.
  const error = (cause: Error) => new Response(`bad request: ${cause.message}\n`, { status: 400 });
  const server = options.socket ? Bun.serve({ unix: options.socket, fetch, error }) : Bun.serve({ hostname: "127.0.0.1", port: options.port ?? 0, fetch, error });
  const port = options.socket ? undefined : server.port;
  return {
    ...(port !== undefined ? { url: `http://127.0.0.1:${port}`, port } : {}),
    ...(options.socket ? { socket: options.socket } : {}),
    log,
    close: async () => {
      await server.stop(true);
    },
  };
}
