/**
 * `forge watch`: follows one Workflow, and the child Workflows its split iterations create
 * (label `openforge.dev/parent-workflow`), with Kubernetes watches (client-node `Watch` on the
 * workflows resource), summarising their pod nodes on every change. When a watch drops it
 * resumes from the last resourceVersion seen; when the server answers 410 Gone (that version was
 * compacted away) it lists again and watches from the list's resourceVersion.
 *
 * Node status comes in three forms (Argo v4.1.2, workflow/packer and workflow/hydrator):
 * `status.nodes`; `status.compressedNodes` (the nodes' JSON gzipped — or zstd / brotli with
 * WORKFLOW_COMPRESSION_ALGORITHM — and base64-encoded) when the Workflow is over 1 MiB; and
 * `status.offloadNodeStatusVersion` when even that is too large and node status offloading is
 * on: the nodes are then in Argo's database, and only the Argo Server hands them out, hydrated,
 * from `GET /api/v1/workflows/{namespace}/{name}` (which also falls back to the workflow
 * archive once the Workflow object is gone).
 */
import { brotliDecompressSync, gunzipSync, zstdDecompressSync } from "node:zlib";
import { CustomObjectsApi, Watch, type KubeConfig } from "@kubernetes/client-node";
import { LABEL_PARENT } from "./fanout.ts";
import { ANNOTATION_PASS_RATE } from "./names.ts";
import { ARGO_GROUP, ARGO_VERSION, describeApiError } from "./kube.ts";

type WorkflowNode = { type?: string; phase?: string; displayName?: string; templateName?: string };
export type WorkflowObject = {
  metadata: { name: string; uid?: string; resourceVersion?: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  status?: { phase?: string; message?: string; progress?: string; nodes?: Record<string, WorkflowNode>; compressedNodes?: string; offloadNodeStatusVersion?: string };
};

export type WorkflowProgress = {
  name: string;
  /** Workflow phase: Pending | Running | Succeeded | Failed | Error ("" before the controller saw it). */
  phase: string;
  /** Pod nodes by phase (this Workflow and its child Workflows). */
  succeeded: number;
  running: number;
  failed: number;
  pending: number;
  /** Rollout pods (template "rollout") finished / total so far. */
  rolloutsDone: number;
  rolloutsTotal: number;
  /** Child Workflows of split iterations seen so far. */
  children?: number;
  /**
   * Workflows whose nodes could not be read, and why (offloaded without an Argo Server to ask,
   * or the Argo Server's error): their pods are missing from the counts.
   */
  unreadable?: string[];
  passRate?: string;
  message?: string;
  resourceVersion?: string;
};

/** Where offloaded node status is read: the Argo Server (`argo-server` Service, port 2746) and a bearer token it accepts. */
export type ArgoServer = { url: string; token?: string };

const FINAL = new Set(["Succeeded", "Failed", "Error"]);
const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd];

/**
 * The nodes of `status.compressedNodes`: base64, then zstd or gzip by their magic bytes, brotli
 * otherwise (as Argo's DecompressContent decides).
 *
 * @example
 * decompressNodes(workflow.status.compressedNodes) // { "quick-1a2b3c4d": { type: "DAG", … }, … }
 */
export function decompressNodes(compressed: string): Record<string, WorkflowNode> {
  const raw = Buffer.from(compressed, "base64");
  let json: Buffer;
  if (ZSTD_MAGIC.every((b, i) => raw[i] === b)) json = zstdDecompressSync(raw);
  else if (raw[0] === 0x1f && raw[1] === 0x8b) json = gunzipSync(raw);
  else json = brotliDecompressSync(raw);
  return JSON.parse(json.toString("utf8")) as Record<string, WorkflowNode>;
}

/**
 * Counts a workflow's pod nodes by phase (from `nodes` or `compressedNodes`; pass `nodes` for
 * offloaded ones read from the Argo Server).
 *
 * @example
 * summarizeWorkflow(workflow) // { phase: "Running", succeeded: 12, running: 4, failed: 1, … }
 */
export function summarizeWorkflow(workflow: WorkflowObject, nodes?: Record<string, WorkflowNode>): WorkflowProgress {
  const progress: WorkflowProgress = {
    name: workflow.metadata.name,
    phase: workflow.status?.phase ?? "",
    succeeded: 0,
    running: 0,
    failed: 0,
    pending: 0,
    rolloutsDone: 0,
    rolloutsTotal: 0,
    passRate: workflow.metadata.annotations?.[ANNOTATION_PASS_RATE],
    message: workflow.status?.message,
    resourceVersion: workflow.metadata.resourceVersion,
  };
  const status = workflow.status;
  const all = nodes ?? status?.nodes ?? (status?.compressedNodes ? decompressNodes(status.compressedNodes) : {});
  for (const node of Object.values(all)) {
    if (node.type !== "Pod") continue;
    const phase = node.phase ?? "Pending";
    if (phase === "Succeeded") progress.succeeded++;
    else if (phase === "Running") progress.running++;
    else if (phase === "Failed" || phase === "Error") progress.failed++;
    else progress.pending++;
    // "rollout", or "rollout-eN" when the tasks run in several images (workflow.ts).
    if (node.templateName === "rollout" || /^rollout-e\d+$/.test(node.templateName ?? "")) {
      progress.rolloutsTotal++;
      if (FINAL.has(phase)) progress.rolloutsDone++;
    }
  }
  return progress;
}

/**
 * The top Workflow's progress with its children's pods added.
 *
 * @example
 * combineProgress(summarizeWorkflow(top), [summarizeWorkflow(child)]).children // 1
 */
export function combineProgress(top: WorkflowProgress, children: WorkflowProgress[], unreadable: string[] = []): WorkflowProgress {
  const total = { ...top, children: children.length };
  for (const child of children) {
    for (const key of ["succeeded", "running", "failed", "pending", "rolloutsDone", "rolloutsTotal"] as const) total[key] += child[key];
  }
  if (unreadable.length) total.unreadable = unreadable;
  else delete total.unreadable;
  return total;
}

/** One progress line: `quick-1a2b3c4d Running  pods ✓12 ▶4 ✗1 …2  rollouts 13/20  pass 0.62`. */
export function formatProgress(p: WorkflowProgress): string {
  const pass = p.passRate !== undefined ? `  pass ${p.passRate}` : "";
  const children = p.children ? `  ${p.children} child workflow${p.children === 1 ? "" : "s"}` : "";
  const unreadable = p.unreadable?.length ? `  (nodes unreadable: ${p.unreadable.join("; ")})` : "";
  return `${p.name} ${(p.phase || "Pending").padEnd(9)} pods ✓${p.succeeded} ▶${p.running} ✗${p.failed} …${p.pending}  rollouts ${p.rolloutsDone}/${p.rolloutsTotal}${children}${pass}${unreadable}`;
}

/**
 * A Workflow as the Argo Server returns it: nodes hydrated (decompressed, offloaded ones read
 * from its database), from the archive when the Workflow object is gone.
 *
 * @example
 * const workflow = await getFromArgoServer({ url: "https://localhost:2746", token }, "forge", "quick-1a2b3c4d");
 */
export async function getFromArgoServer(server: ArgoServer, namespace: string, name: string): Promise<WorkflowObject> {
  const url = `${server.url.replace(/\/+$/, "")}/api/v1/workflows/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
  let response: Response;
  try {
    response = await fetch(url, { headers: server.token ? { authorization: `Bearer ${server.token}` } : {}, signal: AbortSignal.timeout(60_000) });
  } catch (error) {
    throw new Error(`Argo Server ${url}: ${(error as Error).message} (--argo-server is the argo-server Service, e.g. https://localhost:2746 after kubectl -n argo port-forward svc/argo-server 2746)`);
  }
  const text = await response.text();
  if (!response.ok) {
    let message = text;
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? text;
    } catch {}
    const hint = response.status === 401 ? " (pass a token it accepts: --argo-token, or ARGO_TOKEN; in client auth mode, a Kubernetes bearer token)" : "";
    throw new Error(`Argo Server ${url}: HTTP ${response.status}: ${message}${hint}`);
  }
  return JSON.parse(text) as WorkflowObject;
}

export type WatchOptions = {
  namespace: string;
  name: string;
  onProgress?: (progress: WorkflowProgress) => void;
  /** Called when a watch reconnects: "resume" from a resourceVersion, or "relist" after 410 Gone. */
  onReconnect?: (how: "resume" | "relist", resourceVersion: string | undefined) => void;
  signal?: AbortSignal;
  /** Delay before reconnecting a dropped watch (ms). */
  retryDelayMs?: number;
  /** Reads offloaded node status (and archived workflows); without it they are reported unreadable. */
  argoServer?: ArgoServer;
  /** Offloaded nodes of one Workflow are read again at most this often (ms); default 5000. */
  offloadRefreshMs?: number;
};

type Follow = {
  selector: { fieldSelector?: string; labelSelector?: string };
  /** A Workflow was listed, added or modified; returns true to stop following. */
  onWorkflow(workflow: WorkflowObject): Promise<boolean> | boolean;
  onDeleted(workflow: WorkflowObject): void;
  /** The list found nothing (only for the top Workflow: an error, or a look into the archive). */
  onEmpty?(): Promise<boolean>;
};

/**
 * Follows the Workflows a selector matches (list, then watch from the list's resourceVersion;
 * resume after a drop, re-list after 410 Gone) until `onWorkflow` says stop or `signal` aborts.
 */
async function follow(kc: KubeConfig, options: WatchOptions, spec: Follow, signal: AbortSignal): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const watch = new Watch(kc);
  // client-node aborts a watch silent for this long; a quiet workflow (a long veRL step) is
  // normal, and the server ends each watch after timeoutSeconds anyway, so allow more than that.
  // (The field is private in the typings but has no setter; client-node reads it per request.)
  (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = 6 * 60_000;
  const path = `/apis/${ARGO_GROUP}/${ARGO_VERSION}/namespaces/${options.namespace}/workflows`;
  let resourceVersion: string | undefined;
  let firstConnect = true;

  while (!signal.aborted) {
    if (resourceVersion === undefined) {
      // (Re)list: the current state, and the resourceVersion to watch from.
      let list: { metadata?: { resourceVersion?: string }; items?: WorkflowObject[] };
      try {
        list = await custom.listNamespacedCustomObject({ group: ARGO_GROUP, version: ARGO_VERSION, namespace: options.namespace, plural: "workflows", ...spec.selector });
      } catch (error) {
        throw new Error(`listing workflows ${options.namespace}/${spec.selector.fieldSelector ?? spec.selector.labelSelector}: ${describeApiError(error)}`);
      }
      if (!list.items?.length && spec.onEmpty && (await spec.onEmpty())) return;
      for (const workflow of list.items ?? []) if (await spec.onWorkflow(workflow)) return;
      resourceVersion = list.metadata?.resourceVersion ?? list.items?.at(-1)?.metadata.resourceVersion;
      if (!firstConnect) options.onReconnect?.("relist", resourceVersion);
    } else if (!firstConnect) {
      options.onReconnect?.("resume", resourceVersion);
    }
    firstConnect = false;
    if (signal.aborted) return;

    const outcome = await new Promise<"final" | "dropped" | "gone">((resolve, reject) => {
      let settled = false;
      const settle = (value: "final" | "dropped" | "gone") => {
        if (settled) return;
        settled = true;
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      };
      let controller: AbortController | undefined;
      const onAbort = () => {
        controller?.abort();
        settle("dropped");
      };
      signal.addEventListener("abort", onAbort, { once: true });
      // Events are handled one at a time, in order (reading offloaded nodes is asynchronous).
      let queue: Promise<void> = Promise.resolve();
      watch
        .watch(
          path,
          { ...spec.selector, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 300 },
          (type: string, object: WorkflowObject & { code?: number }) => {
            if (settled) return;
            if (type === "ERROR") {
              // The watch stream reports an expired resourceVersion as an ERROR event (a Status, code 410).
              if (object.code === 410) {
                resourceVersion = undefined;
                controller?.abort();
                settle("gone");
              }
              return;
            }
            if (object.metadata?.resourceVersion) resourceVersion = object.metadata.resourceVersion;
            if (type === "BOOKMARK") return;
            queue = queue.then(async () => {
              if (settled) return;
              try {
                if (type === "DELETED") spec.onDeleted(object);
                else if (await spec.onWorkflow(object)) {
                  controller?.abort();
                  settle("final");
                }
              } catch (error) {
                controller?.abort();
                settled = true;
                reject(error);
              }
            });
          },
          (error: unknown) => {
            const status = (error as { statusCode?: number; code?: number } | null)?.statusCode;
            if (status === 410) resourceVersion = undefined;
            // Let the events already received be handled first.
            void queue.then(() => settle(status === 410 ? "gone" : "dropped"));
          },
        )
        .then((c) => {
          controller = c;
          if (settled) c.abort();
        })
        .catch((error: unknown) => {
          // The watch request itself failed (server unreachable, 410 as HTTP status): retry.
          if ((error as { statusCode?: number })?.statusCode === 410 || String(error).includes("410")) resourceVersion = undefined;
          settle("dropped");
        });
    });
    if (outcome === "final" || signal.aborted) return;
    await Bun.sleep(options.retryDelayMs ?? 1000);
  }
}

/**
 * Follows a workflow, and the child Workflows of its split iterations, until it reaches
 * Succeeded, Failed or Error; resolves with the last progress (children's pods included).
 *
 * @example
 * const final = await watchWorkflow(kc, { namespace: "forge", name: "quick-1a2b3c4d", onProgress: (p) => console.log(formatProgress(p)) });
 * process.exitCode = final.phase === "Succeeded" ? 0 : 1;
 */
export async function watchWorkflow(kc: KubeConfig, options: WatchOptions): Promise<WorkflowProgress> {
  const tracker = new ProgressTracker(options);
  const stop = new AbortController();
  const abort = () => stop.abort();
  options.signal?.addEventListener("abort", abort, { once: true });
  const parentSelector = `${LABEL_PARENT}=${options.name}`;
  const children = follow(
    kc,
    options,
    {
      selector: { labelSelector: parentSelector },
      onWorkflow: async (workflow) => {
        tracker.progress.set(workflow.metadata.name, await tracker.summarize(workflow));
        tracker.report();
        return false;
      },
      // A child removed (its TTL) keeps its last counts: its pods did run.
      onDeleted: () => {},
    },
    stop.signal,
  ).catch((error: unknown) => {
    // Without the right to list by label the top Workflow is still followed.
    tracker.unreadable.set(parentSelector, `child workflows: ${(error as Error).message}`);
  });
  try {
    await follow(
      kc,
      options,
      {
        selector: { fieldSelector: `metadata.name=${options.name}` },
        onWorkflow: async (workflow) => {
          const top = await tracker.summarize(workflow);
          tracker.setTop(top);
          return FINAL.has(top.phase);
        },
        onDeleted: () => {
          throw new Error(`workflow ${options.namespace}/${options.name} was deleted`);
        },
        onEmpty: async () => {
          const top = await archivedWorkflow(options);
          tracker.setTop(top);
          if (!FINAL.has(top.phase)) throw new Error(`workflow ${options.namespace}/${options.name} is not in the cluster and the Argo Server has it ${top.phase || "without a phase"}`);
          return true;
        },
      },
      stop.signal,
    );
  } finally {
    stop.abort();
    options.signal?.removeEventListener("abort", abort);
    await children;
  }
  // The children's last counts are in `last`; a final top-level phase ends the watch.
  if (!tracker.last) throw new Error("watch stopped before the workflow was seen");
  return tracker.last;
}

/** A watched workflow that is gone from the cluster, from the Argo Server's archive (if it archives). */
async function archivedWorkflow(options: WatchOptions): Promise<WorkflowProgress> {
  if (!options.argoServer) throw new Error(`workflow ${options.namespace}/${options.name} not found (forge submit prints its name; pass --argo-server to look in the workflow archive)`);
  let archived: WorkflowObject;
  try {
    archived = await getFromArgoServer(options.argoServer, options.namespace, options.name);
  } catch (error) {
    throw new Error(`workflow ${options.namespace}/${options.name} not found in the cluster, nor by the Argo Server: ${(error as Error).message}`);
  }
  return summarizeWorkflow(archived);
}

/** The progress of a workflow and its children, each the last seen; offloaded nodes read from the Argo Server, by version. */
class ProgressTracker {
  readonly progress = new Map<string, WorkflowProgress>();
  private readonly offloaded = new Map<string, { version: string; at: number; nodes: Record<string, WorkflowNode> }>();
  readonly unreadable = new Map<string, string>();
  private top: WorkflowProgress | undefined;
  last: WorkflowProgress | undefined;

  constructor(private readonly options: WatchOptions) {}

  /** The top-level workflow's progress: recorded, then reported with its children's. */
  setTop(top: WorkflowProgress): void {
    this.top = top;
    this.progress.set(this.options.name, top);
    this.report();
  }

  report(): void {
    if (!this.top) return;
    const children = [...this.progress.entries()].filter(([name]) => name !== this.options.name).map(([, p]) => p);
    this.last = combineProgress(this.top, children, [...this.unreadable.values()]);
    this.options.onProgress?.(this.last);
  }

  async summarize(workflow: WorkflowObject): Promise<WorkflowProgress> {
    const { options, offloaded, unreadable } = this;
    const refreshMs = options.offloadRefreshMs ?? 5000;
    const name = workflow.metadata.name;
    const version = workflow.status?.offloadNodeStatusVersion;
    if (!version || workflow.status?.nodes || workflow.status?.compressedNodes) {
      unreadable.delete(name);
      offloaded.delete(name);
      return summarizeWorkflow(workflow);
    }
    if (!options.argoServer) {
      unreadable.set(name, `${name}: node status offloaded to Argo's database (${version}); pass --argo-server to read it`);
      return summarizeWorkflow(workflow, {});
    }
    const cached = offloaded.get(name);
    // The same version, or one read moments ago: a large status is not fetched on every event
    // (a final phase always reads the final nodes).
    const fresh = cached && (cached.version === version || (Date.now() - cached.at < refreshMs && !FINAL.has(workflow.status?.phase ?? "")));
    if (!fresh) {
      try {
        const hydrated = await getFromArgoServer(options.argoServer, options.namespace, name);
        offloaded.set(name, { version, at: Date.now(), nodes: hydrated.status?.nodes ?? {} });
        unreadable.delete(name);
      } catch (error) {
        unreadable.set(name, (error as Error).message);
      }
    }
    return summarizeWorkflow(workflow, offloaded.get(name)?.nodes ?? {});
  }
}
