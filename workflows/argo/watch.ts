/**
 * `forge watch`: follows one Workflow with a Kubernetes watch (client-node `Watch` on the
 * workflows resource), summarising its nodes on every change. When the watch drops it resumes
 * from the last resourceVersion seen; when the server answers 410 Gone (that version was
 * compacted away) it lists the workflow again and watches from the list's resourceVersion.
 */
import { CustomObjectsApi, Watch, type KubeConfig } from "@kubernetes/client-node";
import { ANNOTATION_PASS_RATE } from "./names.ts";
import { ARGO_GROUP, ARGO_VERSION, describeApiError } from "./kube.ts";

type WorkflowNode = { type?: string; phase?: string; displayName?: string; templateName?: string };
export type WorkflowObject = {
  metadata: { name: string; resourceVersion?: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  status?: { phase?: string; message?: string; progress?: string; nodes?: Record<string, WorkflowNode> };
};

export type WorkflowProgress = {
  name: string;
  /** Workflow phase: Pending | Running | Succeeded | Failed | Error ("" before the controller saw it). */
  phase: string;
  /** Pod nodes by phase. */
  succeeded: number;
  running: number;
  failed: number;
  pending: number;
  /** Rollout pods (template "rollout") finished / total so far. */
  rolloutsDone: number;
  rolloutsTotal: number;
  passRate?: string;
  message?: string;
  resourceVersion?: string;
};

const FINAL = new Set(["Succeeded", "Failed", "Error"]);

/**
 * Counts a workflow's pod nodes by phase.
 *
 * @example
 * summarizeWorkflow(workflow) // { phase: "Running", succeeded: 12, running: 4, failed: 1, … }
 */
export function summarizeWorkflow(workflow: WorkflowObject): WorkflowProgress {
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
  for (const node of Object.values(workflow.status?.nodes ?? {})) {
    if (node.type !== "Pod") continue;
    const phase = node.phase ?? "Pending";
    if (phase === "Succeeded") progress.succeeded++;
    else if (phase === "Running") progress.running++;
    else if (phase === "Failed" || phase === "Error") progress.failed++;
    else progress.pending++;
    if (node.templateName === "rollout") {
      progress.rolloutsTotal++;
      if (FINAL.has(phase)) progress.rolloutsDone++;
    }
  }
  return progress;
}

/** One progress line: `quick-1a2b3c4d Running  pods ✓12 ▶4 ✗1 …2  rollouts 13/20  pass 0.62`. */
export function formatProgress(p: WorkflowProgress): string {
  const pass = p.passRate !== undefined ? `  pass ${p.passRate}` : "";
  return `${p.name} ${(p.phase || "Pending").padEnd(9)} pods ✓${p.succeeded} ▶${p.running} ✗${p.failed} …${p.pending}  rollouts ${p.rolloutsDone}/${p.rolloutsTotal}${pass}`;
}

export type WatchOptions = {
  namespace: string;
  name: string;
  onProgress?: (progress: WorkflowProgress) => void;
  /** Called when the watch reconnects: "resume" from a resourceVersion, or "relist" after 410 Gone. */
  onReconnect?: (how: "resume" | "relist", resourceVersion: string | undefined) => void;
  signal?: AbortSignal;
  /** Delay before reconnecting a dropped watch (ms). */
  retryDelayMs?: number;
};

/**
 * Follows a workflow until it reaches Succeeded, Failed or Error; resolves with the last progress.
 *
 * @example
 * const final = await watchWorkflow(kc, { namespace: "forge", name: "quick-1a2b3c4d", onProgress: (p) => console.log(formatProgress(p)) });
 * process.exitCode = final.phase === "Succeeded" ? 0 : 1;
 */
export async function watchWorkflow(kc: KubeConfig, options: WatchOptions): Promise<WorkflowProgress> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const watch = new Watch(kc);
  // client-node aborts a watch silent for this long; a quiet workflow (a long veRL step) is
  // normal, and the server ends each watch after timeoutSeconds anyway, so allow more than that.
  // (The field is private in the typings but has no setter; client-node reads it per request.)
  (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = 6 * 60_000;
  const path = `/apis/${ARGO_GROUP}/${ARGO_VERSION}/namespaces/${options.namespace}/workflows`;
  const fieldSelector = `metadata.name=${options.name}`;
  let resourceVersion: string | undefined;
  let last: WorkflowProgress | undefined;
  let firstConnect = true;

  const see = (workflow: WorkflowObject): boolean => {
    last = summarizeWorkflow(workflow);
    options.onProgress?.(last);
    return FINAL.has(last.phase);
  };

  while (!options.signal?.aborted) {
    if (resourceVersion === undefined) {
      // (Re)list: the current state, and the resourceVersion to watch from.
      let list: { metadata?: { resourceVersion?: string }; items?: WorkflowObject[] };
      try {
        list = await custom.listNamespacedCustomObject({ group: ARGO_GROUP, version: ARGO_VERSION, namespace: options.namespace, plural: "workflows", fieldSelector });
      } catch (error) {
        throw new Error(`listing workflow ${options.namespace}/${options.name}: ${describeApiError(error)}`);
      }
      const workflow = list.items?.[0];
      if (!workflow) throw new Error(`workflow ${options.namespace}/${options.name} not found (forge submit prints its name)`);
      if (see(workflow)) return last!;
      resourceVersion = list.metadata?.resourceVersion ?? workflow.metadata.resourceVersion;
      if (!firstConnect) options.onReconnect?.("relist", resourceVersion);
    } else if (!firstConnect) {
      options.onReconnect?.("resume", resourceVersion);
    }
    firstConnect = false;

    const outcome = await new Promise<"final" | "dropped" | "gone">((resolve, reject) => {
      let settled = false;
      const settle = (value: "final" | "dropped" | "gone") => {
        if (settled) return;
        settled = true;
        resolve(value);
      };
      let controller: AbortController | undefined;
      const onAbort = () => {
        controller?.abort();
        settle("dropped");
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      watch
        .watch(
          path,
          { fieldSelector, resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 300 },
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
            if (type === "DELETED") {
              reject(new Error(`workflow ${options.namespace}/${options.name} was deleted`));
              return;
            }
            if (see(object)) {
              controller?.abort();
              settle("final");
            }
          },
          (error: unknown) => {
            options.signal?.removeEventListener("abort", onAbort);
            const status = (error as { statusCode?: number; code?: number } | null)?.statusCode;
            if (status === 410) resourceVersion = undefined;
            settle(status === 410 ? "gone" : "dropped");
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
    if (outcome === "final") return last!;
    if (options.signal?.aborted) break;
    await Bun.sleep(options.retryDelayMs ?? 1000);
  }
  if (!last) throw new Error("watch stopped before the workflow was seen");
  return last;
}
