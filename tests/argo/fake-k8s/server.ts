/**
 * A fake Kubernetes API server for tests: API discovery for the kinds forge creates, and the
 * REST and watch protocol for namespaced objects
 * (`/api/v1/namespaces/NS/PLURAL[/NAME]`, `/apis/GROUP/VERSION/namespaces/NS/PLURAL[/NAME]`):
 * create (409 AlreadyExists), get (404), replace (409 on a stale resourceVersion), merge
 * patch, delete, list with `fieldSelector=metadata.name=…`, and `?watch=true` streaming
 * newline-delimited `{"type","object"}` events from a resourceVersion, with a compactable
 * event history so a watch from a compacted version gets `ERROR` 410 Expired, like etcd.
 * A `labelSelector` of `key=value` pairs filters lists and watches. `GET /version` answers
 * apimachinery's version.Info (major, minor, gitVersion, …) of a settable server version.
 * Test hooks drop open watches and play the Argo controller by updating objects, compressing a
 * Workflow's node status into `status.compressedNodes` (packer.go: gzip + base64 of the nodes'
 * JSON) or offloading it to a database (hydrator.go: `status.offloadNodeStatusVersion` =
 * `fnv:` + the FNV-1 32-bit hash of the nodes' JSON), and archiving a Workflow.
 *
 * Beside it, on its own port, the part of the Argo Server (v4.1.2, server/workflow) that
 * `forge watch` reads: `GET /api/v1/workflows/{namespace}/{name}` with a bearer token, which
 * answers the Workflow hydrated (nodes decompressed, offloaded ones read from the database),
 * from the archive when the Workflow object is gone; 401 `{code: 16}` without a valid token.
 */
import { gzipSync } from "node:zlib";

type Obj = { apiVersion?: string; kind?: string; metadata: Record<string, unknown> & { name?: string; namespace?: string; resourceVersion?: string }; [key: string]: unknown };
type Event = { rv: number; type: "ADDED" | "MODIFIED" | "DELETED"; collection: string; object: Obj };
type Watcher = { collection: string; name?: string; labels?: (o: Obj) => boolean; send: (event: { type: string; object: unknown }) => void; close: () => void };

export type FakeKubernetes = {
  url: string;
  /** Every request as "METHOD path?query", in order. */
  requests: string[];
  /** The stored object at an item path, e.g. `/apis/argoproj.io/v1alpha1/namespaces/forge/workflows/x`. */
  get(path: string): Obj | undefined;
  /** Stored objects under a collection path. */
  list(collection: string): Obj[];
  /** Mutates a stored object as a controller would; bumps its resourceVersion and emits MODIFIED. */
  update(path: string, mutate: (object: Obj) => void): Obj;
  /** Ends every open watch stream (a dropped connection, from the client's view). */
  dropWatches(): void;
  /** Forgets the event history: watches from an older resourceVersion then get 410 Gone. */
  compact(): void;
  /** Number of watch streams open now. */
  openWatches(): number;
  /**
   * Moves a Workflow's `status.nodes` into `status.compressedNodes`, as Argo's packer does past
   * 1 MiB; `change` first alters the object in the same update (the controller never stores
   * the uncompressed form in between).
   */
  compressNodes(path: string, change?: (object: Obj) => void): Obj;
  /** Moves a Workflow's `status.nodes` into the offload database (after `change`, in one update); returns the version (`fnv:…`). */
  offloadNodes(path: string, change?: (object: Obj) => void): string;
  /** Archives a Workflow (the Argo Server keeps it) and deletes it from the cluster. */
  archive(path: string): void;
  /** The version `GET /version` reports (default 1.31.2); a provider's minor may carry a "+", e.g. "29+". */
  setVersion(major: string, minor: string): void;
  /** The Argo Server's base URL, and the bearer token it accepts. */
  argoServer: { url: string; token: string; requests: string[] };
  stop(): Promise<void>;
};

const ITEM = /^\/(?:api\/v1|apis\/[^/]+\/[^/]+)\/namespaces\/([^/]+)\/([^/]+)(?:\/([^/]+))?$/;

/** What API discovery (`GET /api/v1`, `GET /apis/GROUP/VERSION`) lists: the kinds forge creates, by group version. */
const DISCOVERY: Record<string, [kind: string, plural: string][]> = {
  v1: [
    ["ServiceAccount", "serviceaccounts"],
    ["ConfigMap", "configmaps"],
    ["Secret", "secrets"],
    ["PersistentVolumeClaim", "persistentvolumeclaims"],
    ["Service", "services"],
    ["Endpoints", "endpoints"],
    ["Pod", "pods"],
  ],
  "apps/v1": [
    ["Deployment", "deployments"],
    ["StatefulSet", "statefulsets"],
  ],
  "networking.k8s.io/v1": [["NetworkPolicy", "networkpolicies"]],
  "rbac.authorization.k8s.io/v1": [
    ["Role", "roles"],
    ["RoleBinding", "rolebindings"],
  ],
  "argoproj.io/v1alpha1": [
    ["Workflow", "workflows"],
    ["WorkflowTemplate", "workflowtemplates"],
  ],
};

function discovery(pathname: string): Response | undefined {
  const groupVersion = pathname === "/api/v1" ? "v1" : /^\/apis\/([^/]+\/[^/]+)$/.exec(pathname)?.[1];
  const resources = groupVersion === undefined ? undefined : DISCOVERY[groupVersion];
  if (!resources) return undefined;
  return Response.json({
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion,
    resources: resources.map(([kind, name]) => ({ name, singularName: "", namespaced: true, kind, verbs: ["create", "delete", "get", "list", "patch", "update", "watch"] })),
  });
}

/** FNV-1 32-bit (Go's hash/fnv New32), what Argo versions offloaded node status by. */
function fnv1(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash = Math.imul(hash, 0x01000193) >>> 0;
    hash = (hash ^ byte) >>> 0;
  }
  return hash;
}

/** A `key=value[,key=value]` label selector (the equality form), or undefined when absent. */
function labelMatcher(selector: string | null): ((o: Obj) => boolean) | undefined {
  if (!selector) return undefined;
  const pairs = selector.split(",").map((part) => {
    const match = /^([^=!]+)==?(.*)$/.exec(part.trim());
    if (!match) throw new Error(`the fake serves only key=value label selectors, got "${part}"`);
    return [match[1]!, match[2]!] as const;
  });
  return (o) => pairs.every(([key, value]) => (o.metadata.labels as Record<string, string> | undefined)?.[key] === value);
}

function status(code: number, reason: string, message: string): Response {
  return Response.json({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code }, { status: code });
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = target && typeof target === "object" && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/**
 * Starts the fake on 127.0.0.1, port 0.
 *
 * @example
 * const k8s = await startFakeKubernetes();
 * kc.loadFromOptions({ clusters: [{ name: "fake", server: k8s.url }], ... });
 */
export async function startFakeKubernetes(): Promise<FakeKubernetes> {
  const store = new Map<string, Obj>();
  const history: Event[] = [];
  const watchers = new Set<Watcher>();
  const requests: string[] = [];
  let revision = 100;
  let compactedBefore = 0;
  let uid = 0;
  let version = { major: "1", minor: "31", gitVersion: "v1.31.2" };

  const emit = (type: Event["type"], collection: string, object: Obj) => {
    const event: Event = { rv: Number(object.metadata.resourceVersion), type, collection, object: structuredClone(object) };
    history.push(event);
    for (const watcher of watchers) {
      if (watcher.collection === collection && (!watcher.name || watcher.name === object.metadata.name) && (!watcher.labels || watcher.labels(object))) watcher.send({ type, object: event.object });
    }
  };
  const bump = (object: Obj) => {
    revision += 1;
    object.metadata.resourceVersion = String(revision);
  };

  const watch = (collection: string, url: URL): Response => {
    const name = url.searchParams.get("fieldSelector")?.match(/^metadata\.name=(.+)$/)?.[1];
    const labels = labelMatcher(url.searchParams.get("labelSelector"));
    const from = Number(url.searchParams.get("resourceVersion") ?? revision);
    const encoder = new TextEncoder();
    let watcher: Watcher;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        const send = (event: { type: string; object: unknown }) => controller.enqueue(encoder.encode(`${JSON.stringify(event)}\n`));
        watcher = {
          collection,
          name,
          labels,
          send,
          close: () => {
            watchers.delete(watcher);
            try {
              controller.close();
            } catch {}
          },
        };
        if (from < compactedBefore) {
          // What the API server sends for a compacted resourceVersion: an ERROR event, then it ends the stream.
          send({ type: "ERROR", object: { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message: `too old resource version: ${from} (${compactedBefore})`, reason: "Expired", code: 410 } });
          controller.close();
          return;
        }
        for (const event of history) {
          if (event.rv > from && event.collection === collection && (!name || event.object.metadata.name === name) && (!labels || labels(event.object))) send({ type: event.type, object: event.object });
        }
        watchers.add(watcher);
        // A bookmark (which a client asking allowWatchBookmarks accepts at any time) at once: the
        // API server sends a watch's headers straight away, and Bun sends them with the first
        // bytes, so without it a client could not even abort a watch that has seen no change.
        if (url.searchParams.get("allowWatchBookmarks") === "true") {
          const plural = collection.slice(collection.lastIndexOf("/") + 1);
          const [groupVersion, [kind]] = Object.entries(DISCOVERY).map(([gv, kinds]) => [gv, kinds.find(([, p]) => p === plural) ?? []] as const).find(([, k]) => k.length) ?? ["v1", [""]];
          send({ type: "BOOKMARK", object: { kind, apiVersion: groupVersion, metadata: { resourceVersion: String(revision) } } });
        }
      },
      cancel() {
        watchers.delete(watcher);
      },
    });
    return new Response(stream, { headers: { "content-type": "application/json", "transfer-encoding": "chunked" } });
  };

  const handle = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    requests.push(`${request.method} ${url.pathname}${url.search}`);
    if (request.method === "GET" && url.pathname === "/version") {
      // k8s.io/apimachinery/pkg/version.Info, as the API server's /version answers it.
      return Response.json({ ...version, gitCommit: "0000000000000000000000000000000000000000", gitTreeState: "clean", buildDate: "2026-01-01T00:00:00Z", goVersion: "go1.24.0", compiler: "gc", platform: "linux/amd64" });
    }
    if (request.method === "GET") {
      const resources = discovery(url.pathname);
      if (resources) return resources;
    }
    const match = ITEM.exec(url.pathname);
    if (!match) return status(404, "NotFound", `the fake serves no ${url.pathname}`);
    const [, namespace, , name] = match;
    const collection = name ? url.pathname.slice(0, url.pathname.lastIndexOf("/")) : url.pathname;
    const itemPath = (n: string) => `${collection}/${n}`;

    if (!name && request.method === "GET") {
      if (url.searchParams.get("watch") === "true") return watch(collection, url);
      const only = url.searchParams.get("fieldSelector")?.match(/^metadata\.name=(.+)$/)?.[1];
      const labels = labelMatcher(url.searchParams.get("labelSelector"));
      const items = [...store.entries()].filter(([path, o]) => path.startsWith(`${collection}/`) && (!only || o.metadata.name === only) && (!labels || labels(o))).map(([, o]) => o);
      return Response.json({ kind: "List", apiVersion: "v1", metadata: { resourceVersion: String(revision) }, items });
    }
    if (!name && request.method === "POST") {
      const body = (await request.json()) as Obj;
      const objectName = body.metadata.name ?? `${body.metadata.generateName ?? "obj-"}${Math.random().toString(36).slice(2, 7)}`;
      if (store.has(itemPath(objectName))) return status(409, "AlreadyExists", `${body.kind} "${objectName}" already exists`);
      const object: Obj = { ...body, metadata: { ...body.metadata, name: objectName, namespace, uid: `uid-${++uid}`, creationTimestamp: new Date().toISOString() } };
      // A headless Service keeps clusterIP "None"; any other gets an address.
      if (object.kind === "Service" && (object.spec as Record<string, unknown>).clusterIP !== "None") (object.spec as Record<string, unknown>).clusterIP = `10.96.0.${uid}`;
      if (object.kind === "Secret" && object.stringData) {
        object.data = Object.fromEntries(Object.entries(object.stringData as Record<string, string>).map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
        delete object.stringData;
      }
      bump(object);
      store.set(itemPath(objectName), object);
      emit("ADDED", collection, object);
      return Response.json(object, { status: 201 });
    }
    const path = itemPath(name!);
    const existing = store.get(path);
    if (!existing) return status(404, "NotFound", `${collection.split("/").pop()} "${name}" not found`);
    switch (request.method) {
      case "GET":
        return Response.json(existing);
      case "PUT": {
        const body = (await request.json()) as Obj;
        if (body.metadata.resourceVersion && body.metadata.resourceVersion !== existing.metadata.resourceVersion) {
          return status(409, "Conflict", `the object has been modified; please apply your changes to the latest version`);
        }
        const ip = (existing.spec as { clusterIP?: string } | undefined)?.clusterIP;
        if (existing.kind === "Service" && (body.spec as { clusterIP?: string }).clusterIP !== ip) {
          return status(422, "Invalid", `Service "${name}" is invalid: spec.clusterIP: Invalid value: field is immutable`);
        }
        const object: Obj = { ...body, metadata: { ...existing.metadata, ...body.metadata } };
        bump(object);
        store.set(path, object);
        emit("MODIFIED", collection, object);
        return Response.json(object);
      }
      case "PATCH": {
        const object = mergePatch(existing, await request.json()) as Obj;
        bump(object);
        store.set(path, object);
        emit("MODIFIED", collection, object);
        return Response.json(object);
      }
      case "DELETE": {
        store.delete(path);
        bump(existing);
        emit("DELETED", collection, existing);
        return Response.json({ kind: "Status", apiVersion: "v1", status: "Success", code: 200 });
      }
      default:
        return status(405, "MethodNotAllowed", `${request.method} is not served`);
    }
  };

  // The Argo Server: offloaded node status by (workflow uid, version), and the archive.
  const offloaded = new Map<string, unknown>();
  const archived = new Map<string, Obj>();
  const argoToken = `argo-${crypto.randomUUID()}`;
  const argoRequests: string[] = [];
  const grpcError = (http: number, code: number, message: string) => Response.json({ code, message }, { status: http });
  const argoServer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const url = new URL(request.url);
      argoRequests.push(`${request.method} ${url.pathname}${url.search}`);
      // server/auth/gatekeeper.go: codes.Unauthenticated (16), HTTP 401.
      if (request.headers.get("authorization") !== `Bearer ${argoToken}`) return grpcError(401, 16, "token not valid. see https://argo-workflows.readthedocs.io/en/latest/faq/");
      const match = /^\/api\/v1\/workflows\/([^/]+)\/([^/]+)$/.exec(url.pathname);
      if (request.method !== "GET" || !match) return grpcError(404, 5, `Not Found: ${url.pathname}`);
      const path = `/apis/argoproj.io/v1alpha1/namespaces/${match[1]}/workflows/${match[2]}`;
      // GetWorkflow: the live object, else the archive (workflow_server.go getWorkflow).
      const live = store.get(path) ?? archived.get(path);
      if (!live) return grpcError(404, 5, `workflows.argoproj.io "${match[2]}" not found`);
      const workflow = structuredClone(live);
      const st = (workflow.status ?? {}) as { nodes?: unknown; compressedNodes?: string; offloadNodeStatusVersion?: string };
      // hydrator.Hydrate: decompress, then read offloaded nodes by (uid, version).
      if (st.compressedNodes) {
        st.nodes = JSON.parse(Bun.gunzipSync(Buffer.from(st.compressedNodes, "base64")).toString());
        delete st.compressedNodes;
      }
      if (st.offloadNodeStatusVersion) {
        const nodes = offloaded.get(`${workflow.metadata.uid}/${st.offloadNodeStatusVersion}`);
        if (nodes === undefined) return grpcError(500, 13, `offloaded node status ${st.offloadNodeStatusVersion} of ${workflow.metadata.uid} not found`);
        st.nodes = nodes;
        delete st.offloadNodeStatusVersion;
      }
      return Response.json(workflow);
    },
  });

  // idleTimeout 0: a watch may sit silent for a long time, as on a real API server.
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: handle });
  const mutate = (path: string, change: (object: Obj) => void): Obj => {
    const object = store.get(path);
    if (!object) throw new Error(`fake-k8s: no object at ${path}`);
    change(object);
    bump(object);
    emit("MODIFIED", path.slice(0, path.lastIndexOf("/")), object);
    return object;
  };
  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    get: (path) => store.get(path),
    list: (collection) => [...store.entries()].filter(([path]) => path.startsWith(`${collection}/`)).map(([, o]) => o),
    update: mutate,
    compressNodes: (path, change) =>
      mutate(path, (object) => {
        change?.(object);
        const st = object.status as { nodes?: unknown; compressedNodes?: string };
        st.compressedNodes = gzipSync(JSON.stringify(st.nodes ?? {})).toString("base64");
        delete st.nodes;
      }),
    offloadNodes(path, change) {
      let version = "";
      mutate(path, (object) => {
        change?.(object);
        const st = object.status as { nodes?: unknown; offloadNodeStatusVersion?: string };
        const json = JSON.stringify(st.nodes ?? {});
        version = `fnv:${fnv1(json)}`;
        offloaded.set(`${object.metadata.uid}/${version}`, JSON.parse(json));
        delete st.nodes;
        st.offloadNodeStatusVersion = version;
      });
      return version;
    },
    archive(path) {
      const object = store.get(path);
      if (!object) throw new Error(`fake-k8s: no object at ${path}`);
      archived.set(path, structuredClone(object));
      store.delete(path);
      bump(object);
      emit("DELETED", path.slice(0, path.lastIndexOf("/")), object);
    },
    argoServer: { url: `http://127.0.0.1:${argoServer.port}`, token: argoToken, requests: argoRequests },
    setVersion(major, minor) {
      version = { major, minor, gitVersion: `v${major}.${Number.parseInt(minor, 10)}.0` };
    },
    dropWatches() {
      for (const watcher of [...watchers]) watcher.close();
    },
    compact() {
      compactedBefore = revision;
      history.length = 0;
    },
    openWatches: () => watchers.size,
    async stop() {
      for (const watcher of [...watchers]) watcher.close();
      await server.stop(true);
      await argoServer.stop(true);
    },
  };
}
