/**
 * The weight-sync step against each engine stand-in (the simulator's vLLM 0.33.0 and SGLang
 * 0.5.23 flavours, two servers each) and the real proxy: the policy version advances only when
 * every server confirmed it serves the checkpoint, and a server that does not take it fails the
 * step clearly while the proxy stays at its version. Strategy restart runs against the fake
 * Kubernetes API server, the test playing the Deployment controller.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { type StartedPolicySimulator } from "../../simulator/testing.ts";
import { syncWeights } from "../../workflows/argo/weight-sync.ts";
import { startFakeKubernetes, type FakeKubernetes } from "../argo/fake-k8s/server.ts";

const ROOT = resolve(import.meta.dir, "..", "..");
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "forge-sync-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A checkpoint directory as veRL's HF save leaves it (the stand-ins check for weight files). */
function checkpoint(name: string, weights = true): string {
  const path = join(dir, name, "actor", "huggingface");
  Bun.spawnSync(["mkdir", "-p", path]);
  writeFileSync(join(path, "config.json"), "{}");
  if (weights) writeFileSync(join(path, "model.safetensors"), "weights");
  return path;
}

async function syncStep(h: ProxyHarness, args: string[]) {
  const run = Bun.spawn(["bun", "workflows/argo/step.ts", "sync", "--proxy", h.proxy.url, "--strategy", "update-from-disk", "--namespace", "forge", ...args], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, FORGE_ADMIN_TOKEN: h.adminToken },
  });
  const [stdout, stderr, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
  return { stdout, stderr, code };
}

async function health(h: ProxyHarness): Promise<{ policy_version: number; paused: boolean }> {
  return (await (await fetch(`${h.proxy.url}/healthz`)).json()) as any;
}

for (const engine of ["vllm", "sglang"] as const) {
  describe(`weight sync against the ${engine} stand-in`, () => {
    test("update-from-disk: every server loads the checkpoint, then the proxy advances and calls record the new version", async () => {
      const h = await startProxyHarness({ simulators: 2, sim: { engine } });
      try {
        const ckpt = checkpoint(`${engine}-ok/global_step_1`);
        const servers = h.sims.flatMap((s) => ["--server", `${s.url}/v1`]);
        const { code, stdout, stderr } = await syncStep(h, ["--checkpoint", ckpt, "--policy-version", "1", "--engine", "auto", ...servers]);
        expect(stderr).toBe("");
        expect(code).toBe(0);
        expect(stdout).toContain("proxy resumed at policy version 1");
        for (const s of h.sims) {
          expect(s.engine.modelPath).toBe(ckpt);
          expect(s.engine.weightVersion).toBe("1");
          expect(s.engine.paused).toBeUndefined();
        }
        expect(await health(h)).toMatchObject({ policy_version: 1, paused: false });
        const r = await h.register();
        await h.client(r).chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: "after the sync" }] });
        const [call] = await h.calls(r.rollout_id);
        expect(call!.policyVersion).toBe(1);
        if (engine === "sglang") expect(JSON.parse(new TextDecoder().decode(call!.responseBody)).metadata.weight_version).toBe("1");
      } finally {
        await h.close();
      }
    });

    test("one server that cannot load fails the sync naming it and the engine's reason; the proxy stays at its version", async () => {
      const h = await startProxyHarness({ simulators: 2, sim: { engine } });
      try {
        h.sims[1]!.engine.faults.failWeightLoad = "size mismatch for lm_head.weight";
        const ckpt = checkpoint(`${engine}-one/global_step_1`);
        const { code, stderr } = await syncStep(h, ["--checkpoint", ckpt, "--policy-version", "1", "--engine", engine, ...h.sims.flatMap((s) => ["--server", `${s.url}/v1`])]);
        expect(code).toBe(1);
        expect(stderr).toContain("1 of 2 inference servers did not take");
        expect(stderr).toContain(`${h.sims[1]!.url}/v1:`);
        expect(stderr).toContain("size mismatch for lm_head.weight");
        expect(stderr).toContain(engine === "vllm" ? "POST /collective_rpc answered HTTP 500" : "POST /update_weights_from_disk answered HTTP 400");
        expect(stderr).toContain(`(${h.sims[0]!.url}/v1 took it`);
        expect(await health(h)).toMatchObject({ policy_version: 0, paused: false });
        // The failed server was resumed: it still serves (vLLM would refuse with 503 while paused).
        expect(h.sims[1]!.engine.paused).toBeUndefined();
        const r = await h.register();
        await h.client(r).chat.completions.create({ model: "qwen3", messages: [{ role: "user", content: "still serving" }] });
        expect((await h.calls(r.rollout_id))[0]!.policyVersion).toBe(0);
      } finally {
        await h.close();
      }
    });

    test("a checkpoint directory without weights fails on every server", async () => {
      const h = await startProxyHarness({ simulators: 2, sim: { engine } });
      try {
        const ckpt = checkpoint(`${engine}-empty/global_step_1`, false);
        const { code, stderr } = await syncStep(h, ["--checkpoint", ckpt, "--policy-version", "1", ...h.sims.flatMap((s) => ["--server", s.url])]);
        expect(code).toBe(1);
        expect(stderr).toContain("2 of 2 inference servers did not take");
        expect(stderr).toContain(engine === "vllm" ? "Cannot find any model weights" : "Failed to get weights iterator");
        expect(await health(h)).toMatchObject({ policy_version: 0, paused: false });
      } finally {
        await h.close();
      }
    });
  });
}

test("vLLM without VLLM_SERVER_DEV_MODE: the sync says the weight routes need it", async () => {
  const h = await startProxyHarness({ simulators: 1, sim: { engine: "vllm", devMode: false } });
  try {
    const { code, stderr } = await syncStep(h, ["--checkpoint", checkpoint("nodev/global_step_1"), "--policy-version", "1", "--server", h.sims[0]!.url]);
    expect(code).toBe(1);
    expect(stderr).toContain("POST /pause?mode=wait answered 404");
    expect(stderr).toContain("VLLM_SERVER_DEV_MODE=1");
    expect(await health(h)).toMatchObject({ policy_version: 0, paused: false });
  } finally {
    await h.close();
  }
});

describe("strategy restart (fake Kubernetes API, the test plays the Deployment controller)", () => {
  let k8s: FakeKubernetes;
  let kc: KubeConfig;
  const NS = "inference";
  const path = `/apis/apps/v1/namespaces/${NS}/deployments/vllm`;
  beforeAll(async () => {
    k8s = await startFakeKubernetes();
    kc = new KubeConfig();
    kc.loadFromOptions({ clusters: [{ name: "f", server: k8s.url, skipTLSVerify: true }], users: [{ name: "u" }], contexts: [{ name: "f", cluster: "f", user: "u" }], currentContext: "f" });
  });
  afterAll(async () => {
    await k8s.stop();
  });

  async function createDeployment(args: string[]) {
    await fetch(`${k8s.url}/apis/apps/v1/namespaces/${NS}/deployments/vllm`, { method: "DELETE" });
    const body = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "vllm", namespace: NS },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "vllm" } },
        template: {
          metadata: { labels: { app: "vllm" } },
          spec: { containers: [{ name: "vllm", image: "vllm/vllm-openai:v0.33.0", args, env: [{ name: "FORGE_CHECKPOINT", value: "Qwen/Qwen3-8B" }] }] },
        },
      },
      status: { replicas: 2, updatedReplicas: 2, readyReplicas: 2 },
    };
    const response = await fetch(`${k8s.url}/apis/apps/v1/namespaces/${NS}/deployments`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(response.status).toBe(201);
  }

  const control = (h: ProxyHarness) => async (proxy: string, p: string, body: unknown) => {
    const response = await fetch(proxy + p, { method: "POST", headers: { authorization: `Bearer ${h.adminToken}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${p}: ${response.status}`);
    return response.json();
  };

  test("the Deployment is pointed at the checkpoint and rolled out; the proxy advances once every new server serves it", async () => {
    await createDeployment(["serve", "$(FORGE_CHECKPOINT)", "--served-model-name", "qwen3"]);
    // Two vLLM servers at fixed ports: the "pods" the controller replaces.
    let servers: StartedPolicySimulator[] = [await startPolicySimulator({ seed: 1, engine: "vllm", modelPath: "Qwen/Qwen3-8B" }), await startPolicySimulator({ seed: 2, engine: "vllm", modelPath: "Qwen/Qwen3-8B" })];
    const ports = servers.map((s) => Number(new URL(s.url).port));
    const h = await startProxyHarness({ simulators: 0, proxy: { upstreams: servers.map((s) => `${s.url}/v1`) } });
    const ckpt = checkpoint("restart/global_step_1");
    let stopController = false;
    const controller = (async () => {
      // Until the template names the checkpoint, then the rollout: new pods load what FORGE_CHECKPOINT says.
      while (!stopController) {
        const d = k8s.get(path) as any;
        const env = d?.spec?.template?.spec?.containers?.[0]?.env ?? [];
        const target = env.find((e: any) => e.name === "FORGE_CHECKPOINT")?.value;
        if (target === ckpt) {
          for (const s of servers) await s.stop();
          servers = await Promise.all(ports.map((port, i) => startPolicySimulator({ seed: i + 1, engine: "vllm", modelPath: target, port })));
          k8s.update(path, (o: any) => (o.status = { observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 2 }));
          return;
        }
        await Bun.sleep(50);
      }
    })();
    try {
      await syncWeights({
        proxy: h.proxy.url,
        strategy: "restart",
        checkpoint: ckpt,
        policyVersion: 1,
        servers: servers.map((s) => `${s.url}/v1`),
        engine: "vllm",
        deployment: "vllm",
        namespace: "forge",
        deploymentNamespace: NS,
        checkpointClaim: "exp-checkpoints",
        checkpointMount: "/checkpoints",
        timeoutSeconds: 60,
        control: control(h),
        kubeConfig: async () => kc,
        log: () => {},
      });
      await controller;
      const d = k8s.get(path) as any;
      const pod = d.spec.template.spec;
      expect(pod.containers[0].env).toContainEqual({ name: "FORGE_CHECKPOINT", value: ckpt });
      expect(pod.containers[0].env).toContainEqual({ name: "FORGE_POLICY_VERSION", value: "1" });
      expect(d.spec.template.metadata.annotations["openforge.dev/policy-version"]).toBe("1");
      expect(pod.volumes).toContainEqual({ name: "forge-checkpoints", persistentVolumeClaim: { claimName: "exp-checkpoints", readOnly: true } });
      expect(pod.containers[0].volumeMounts).toContainEqual({ name: "forge-checkpoints", mountPath: "/checkpoints", readOnly: true });
      for (const s of servers) {
        expect(s.engine.modelPath).toBe(ckpt);
        expect(s.engine.weightVersion).toBe("1");
      }
      expect(await health(h)).toMatchObject({ policy_version: 1, paused: false });
    } finally {
      stopController = true;
      await controller;
      await h.close();
      for (const s of servers) await s.stop();
    }
  });

  test("a container that does not load $(FORGE_CHECKPOINT) is refused before anything changes; the proxy stays at its version", async () => {
    await createDeployment(["serve", "Qwen/Qwen3-8B"]);
    const h = await startProxyHarness({ simulators: 1, sim: { engine: "vllm" } });
    try {
      const error = await syncWeights({
        proxy: h.proxy.url,
        strategy: "restart",
        checkpoint: checkpoint("restart-bad/global_step_1"),
        policyVersion: 1,
        servers: [h.sims[0]!.url],
        engine: "vllm",
        deployment: "vllm",
        namespace: "forge",
        deploymentNamespace: NS,
        timeoutSeconds: 10,
        control: control(h),
        kubeConfig: async () => kc,
        log: () => {},
      }).catch((e: Error) => e);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toContain("container vllm does not load $(FORGE_CHECKPOINT)");
      expect((k8s.get(path) as any).spec.template.spec.containers[0].env).toEqual([{ name: "FORGE_CHECKPOINT", value: "Qwen/Qwen3-8B" }]);
      expect(await health(h)).toMatchObject({ policy_version: 0, paused: false });
    } finally {
      await h.close();
    }
  });
});
