/**
 * Every pod `forge render` produces runs restricted (non-root, no privilege escalation, every
 * capability dropped, RuntimeDefault seccomp, a read-only root filesystem for the containers that
 * run only this project's code), validated against the real Kubernetes and Argo schemas (the
 * models' validate(), which rejects a malformed securityContext); and the containers that run
 * task code (harness, verifier) have no secret, no service-account token and cannot read the
 * token-holding containers' /proc (no shared PID namespace).
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { WorkflowTemplate } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { parseExperimentFile } from "../../schemas/index.ts";
import { renderExperiment } from "../../workflows/argo/render.ts";

const FIXTURE = join(import.meta.dir, "..", "..", "workflows", "argo", "fixtures", "experiment.yaml");
type Any = Record<string, any>;
const render = () => renderExperiment(parseExperimentFile(FIXTURE), { namespace: "forge", experimentPath: FIXTURE }) as Any[];
const workflowTemplate = (objects: Any[]) => objects.find((o) => o.kind === "WorkflowTemplate")!;

/** Every pod-running template with its containers (main, containerSet, init). */
function pods(objects: Any[]): { name: string; pod: Any; containers: Any[] }[] {
  return workflowTemplate(objects)
    .spec.templates.filter((t: Any) => t.container || t.containerSet)
    .map((t: Any) => ({ name: t.name, pod: t, containers: [...(t.initContainers ?? []), ...(t.container ? [t.container] : []), ...(t.containerSet?.containers ?? [])] }));
}

describe("restricted pods", () => {
  test("every workflow pod and container: non-root, no escalation, no capabilities, RuntimeDefault seccomp", () => {
    const objects = render();
    const list = pods(objects);
    expect(list.map((p) => p.name).sort()).toEqual(["admit", "analyze", "exit-handler", "export", "plan", "prune-checkpoints", "report", "rollout", "sync", "train-0", "train-1"]);
    const forgeImage = "ghcr.io/openforge/forge:0.1.0";
    for (const { name, pod, containers } of list) {
      expect({ name, ...pod.securityContext }).toEqual({ name, runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, seccompProfile: { type: "RuntimeDefault" } });
      expect(pod.podSpecPatch).toBeUndefined();
      for (const c of containers) {
        const where = `${name}/${c.name}`;
        expect({ where, ...c.securityContext }).toEqual({
          where,
          runAsNonRoot: true,
          allowPrivilegeEscalation: false,
          privileged: false,
          capabilities: { drop: ["ALL"] },
          // This project's own code (and the bundle's copy) runs on a read-only root; task code and veRL keep a writable one.
          readOnlyRootFilesystem: c.image === forgeImage || c.name === "bundle",
          seccompProfile: { type: "RuntimeDefault" },
        });
        // A read-only root still has a writable /tmp and HOME there.
        if (c.image === forgeImage && !c.mirrorVolumeMounts) {
          expect(c.volumeMounts.some((m: Any) => m.mountPath === "/tmp")).toBe(true);
          expect(c.env).toContainEqual({ name: "HOME", value: "/tmp" });
        }
      }
    }
    // The proxy Deployment too.
    const proxy = objects.find((o) => o.kind === "Deployment")!.spec.template.spec;
    expect(proxy.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
    expect(proxy.automountServiceAccountToken).toBe(false);
    for (const c of proxy.containers) expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] }, readOnlyRootFilesystem: true });
  });

  test("the schemas check it: the rendered objects validate, a malformed securityContext does not", () => {
    const objects = render();
    const template = workflowTemplate(objects);
    expect(() => new WorkflowTemplate(template as never).validate()).not.toThrow();
    const broken = (mutate: (t: Any) => void) => {
      const copy = structuredClone(template);
      mutate(copy.spec.templates.find((t: Any) => t.name === "rollout"));
      return () => new WorkflowTemplate(copy as never).validate();
    };
    expect(broken((t) => (t.containerSet.containers[1].securityContext.capabilities.drop = "ALL"))).toThrow(/drop/);
    expect(broken((t) => (t.containerSet.containers[1].securityContext.allowPrivilegeEscalation = "no"))).toThrow(/allowPrivilegeEscalation/);
    expect(broken((t) => (t.securityContext.runAsNonRoot = "yes"))).toThrow(/runAsNonRoot/);
    expect(broken((t) => (t.securityContext.seccompProfile = { kind: "RuntimeDefault" }))).toThrow(/seccompProfile/);
    const deployment = structuredClone(objects.find((o) => o.kind === "Deployment")!);
    expect(() => new Deployment(deployment as never).validate()).not.toThrow();
    deployment.spec.template.spec.containers[0].securityContext.readOnlyRootFilesystem = "true";
    expect(() => new Deployment(deployment as never).validate()).toThrow(/readOnlyRootFilesystem/);
  });

  test("task code runs where no secret is: harness and verify containers have no env, no token volume, no service-account token", () => {
    const rollout = workflowTemplate(render()).spec.templates.find((t: Any) => t.name === "rollout");
    expect(rollout.automountServiceAccountToken).toBe(false);
    const byName = Object.fromEntries(rollout.containerSet.containers.map((c: Any) => [c.name, c]));
    for (const name of ["harness", "verify"]) {
      // Only the image's name (for the bundle's preflight) and HOME; nothing from a Secret.
      expect(byName[name].env.map((e: Any) => e.name)).toEqual(["FORGE_TASK_IMAGE", "HOME"]);
      expect(byName[name].env.some((e: Any) => e.valueFrom)).toBe(false);
      expect(byName[name].envFrom).toBeUndefined();
      expect(byName[name].volumeMounts.map((m: Any) => m.name)).not.toContain("control");
    }
    // The harness cannot reach the verifier's output or the tests; the verifier cannot reach the rollout's key.
    expect(byName.harness.volumeMounts.map((m: Any) => m.name).sort()).toEqual(["forge-bundle", "harness-out", "state", "workspace"]);
    // The bundle read-only: task code cannot change the step runner the verifier runs from.
    for (const name of ["harness", "verify"]) expect(byName[name].volumeMounts.find((m: Any) => m.name === "forge-bundle")).toEqual({ name: "forge-bundle", mountPath: "/opt/forge", readOnly: true });
    expect(byName.verify.volumeMounts.map((m: Any) => m.name)).not.toContain("state");
    // Only register and main hold the token, and they run no task code.
    const withToken = rollout.containerSet.containers.filter((c: Any) => (c.env ?? []).some((e: Any) => e.name === "FORGE_ADMIN_TOKEN")).map((c: Any) => c.name);
    expect(withToken).toEqual(["register", "main"]);
  });
});
