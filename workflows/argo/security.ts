/**
 * The restricted security settings every pod of the workflow runs with (Kubernetes' "restricted"
 * Pod Security Standard): a non-root user, no privilege escalation, every capability dropped, the
 * runtime's default seccomp profile, and a read-only root filesystem wherever the container only
 * runs this project's own code. Harness and verifier containers keep a writable root filesystem:
 * task tools install and write where their task expects; their user is still unprivileged.
 */
import type { IComGithubArgoprojArgoWorkflowsV4PkgApisWorkflowV1alpha1Template as Template } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1/Template";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { IPodSecurityContext } from "kubernetes-models/v1/PodSecurityContext";

/** The uid / gid the pods run as (any non-root id works; images need no USER line for it). */
export const POD_UID = 1000;

/**
 * Pod-level settings: uid/gid, fsGroup (so emptyDirs and the data volume are writable by that
 * user), seccomp RuntimeDefault.
 *
 * @example
 * restrictedPod().runAsNonRoot // true
 */
export function restrictedPod(): IPodSecurityContext {
  return { runAsNonRoot: true, runAsUser: POD_UID, runAsGroup: POD_UID, fsGroup: POD_UID, seccompProfile: { type: "RuntimeDefault" } };
}

/**
 * Container-level settings. `readOnlyRoot: false` only for containers that run task code.
 *
 * @example
 * restrictedContainer({ readOnlyRoot: true }).capabilities // { drop: ["ALL"] }
 */
export function restrictedContainer(options: { readOnlyRoot: boolean }): NonNullable<IContainer["securityContext"]> {
  return {
    runAsNonRoot: true,
    allowPrivilegeEscalation: false,
    privileged: false,
    capabilities: { drop: ["ALL"] },
    readOnlyRootFilesystem: options.readOnlyRoot,
    seccompProfile: { type: "RuntimeDefault" },
  };
}

/**
 * Environment for a forge-image container with a read-only root: HOME and TMPDIR on the
 * writable `/tmp` emptyDir, Bun's transpiler cache off (it would write under HOME).
 */
export const READ_ONLY_ROOT_ENV = [
  { name: "HOME", value: "/tmp" },
  { name: "TMPDIR", value: "/tmp" },
  { name: "BUN_RUNTIME_TRANSPILER_CACHE_PATH", value: "0" },
];

/**
 * A pod template (a single `container`, its init containers) with the restricted settings: the
 * pod's security context, each container's, and for containers of `readOnlyImages` a read-only
 * root with HOME/TMPDIR on a `/tmp` emptyDir. DAG templates (no pod) come back unchanged; a
 * containerSet template must set its own (workflow.ts does: its containers differ).
 *
 * @example
 * restrictTemplate({ name: "plan", container: { name: "main", image: "forge" } }, new Set(["forge"])).securityContext?.runAsNonRoot // true
 */
export function restrictTemplate(template: Template, readOnlyImages: Set<string>): Template {
  if (!template.container) return template;
  const tmpMount = { name: "tmp", mountPath: "/tmp" };
  const secure = <C extends IContainer>(container: C, readOnlyRoot: boolean): C => ({
    ...container,
    securityContext: restrictedContainer({ readOnlyRoot }),
    // HOME for a uid with no passwd entry; the root filesystem is read-only or the image's.
    env: [...(container.env ?? []), ...READ_ONLY_ROOT_ENV.filter((v) => readOnlyRoot || v.name === "HOME").filter((v) => !container.env?.some((e) => e.name === v.name))],
    volumeMounts: [...(container.volumeMounts ?? []), ...(container.volumeMounts?.some((m) => m.mountPath === "/tmp") ? [] : [tmpMount])],
  });
  return {
    ...template,
    securityContext: restrictedPod(),
    container: secure(template.container as IContainer, readOnlyImages.has(template.container.image ?? "")),
    // Init containers mirroring the main container's mounts get /tmp from it.
    ...(template.initContainers
      ? { initContainers: template.initContainers.map((c) => ({ ...c, securityContext: restrictedContainer({ readOnlyRoot: readOnlyImages.has(c.image ?? "") }), env: [...(c.env ?? []), ...READ_ONLY_ROOT_ENV] })) }
      : {}),
    volumes: [...(template.volumes ?? []), { name: "tmp", emptyDir: {} }],
  };
}
