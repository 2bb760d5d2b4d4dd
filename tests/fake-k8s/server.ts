/**
 * A fake Kubernetes API server for tests: API discovery for the kinds forge creates, and the
 * REST and watch protocol for namespaced objects
 * (`/api/v1/namespaces/NS/PLURAL[/NAME]`, `/apis/GROUP/VERSION/namespaces/NS/PLURAL[/NAME]`):
 * create (409 AlreadyExists), get (404), replace (409 on a stale resourceVersion), merge
 * patch, delete, list with `fieldSelector=metadata.name=…`, and `?watch=true` streaming
 * newline-delimited `{"type","object"}` events from a resourceVersion, with a compactable
 * event history so a watch from a compacted version gets `ERROR` 410 Expired, like etcd.
 * Test hooks drop open watches and play the Argo controller by updating objects.
 */

type Obj = { apiVersion?: string; kind?: string; metadata: Record<string, unknown> & { name?: string; namespace?: string; resourceVersion?: string }; [key: string]: unknown };
type Event = { rv: number; type: "ADDED" | "MODIFIED" | "DELETED"; collection: string; object: Obj };
type Watcher = { collection: string; name?: string; send: (event: { type: string; object: unknown }) => void; close: () => void };

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
  "apps/v1": [["Deployment", "deployments"]],
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

  const emit = (type: Event["type"], collection: string, object: Obj) => {
    const event: Event = { rv: Number(object.metadata.resourceVersion), type, collection, object: structuredClone(object) };
    history.push(event);
    for (const watcher of watchers) {
      if (watcher.collection === collection && (!watcher.name || watcher.name === object.metadata.name)) watcher.send({ type, object: event.object });
    }
  };
  const bump = (object: Obj) => {
    revision += 1;
    object.metadata.resourceVersion = String(revision);
  };

  const watch = (collection: string, url: URL): Response => {
    const name = url.searchParams.get("fieldSelector")?.match(/^metadata\.name=(.+)$/)?.[1];
    const from = Number(url.searchParams.get("resourceVersion") ?? revision);
    const encoder = new TextEncoder();
    let watcher: Watcher;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        const send = (event: { type: string; object: unknown }) => controller.enqueue(encoder.encode(`${JSON.stringify(event)}\n`));
        watcher = {
          collection,
          name,
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
          if (event.rv > from && event.collection === collection && (!name || event.object.metadata.name === name)) send({ type: event.type, object: event.object });
        }
        watchers.add(watcher);
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
      const items = [...store.entries()].filter(([path, o]) => path.startsWith(`${collection}/`) && (!only || o.metadata.name === only)).map(([, o]) => o);
      return Response.json({ kind: "List", apiVersion: "v1", metadata: { resourceVersion: String(revision) }, items });
    }
    if (!name && request.method === "POST") {
      const body = (await request.json()) as Obj;
      const objectName = body.metadata.name ?? `${body.metadata.generateName ?? "obj-"}${Math.random().toString(36).slice(2, 7)}`;
      if (store.has(itemPath(objectName))) return status(409, "AlreadyExists", `${body.kind} "${objectName}" already exists`);
      const object: Obj = { ...body, metadata: { ...body.metadata, name: objectName, namespace, uid: `uid-${++uid}`, creationTimestamp: new Date().toISOString() } };
      if (object.kind === "Service") (object.spec as Record<string, unknown>).clusterIP = `10.96.0.${uid}`;
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

  // idleTimeout 0: a watch may sit silent for a long time, as on a real API server.
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: handle });
  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    get: (path) => store.get(path),
    list: (collection) => [...store.entries()].filter(([path]) => path.startsWith(`${collection}/`)).map(([, o]) => o),
    update(path, mutate) {
      const object = store.get(path);
      if (!object) throw new Error(`fake-k8s: no object at ${path}`);
      mutate(object);
      bump(object);
      emit("MODIFIED", path.slice(0, path.lastIndexOf("/")), object);
      return object;
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
    },
  };
}
