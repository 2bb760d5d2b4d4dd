/**
 * Runs a rendered Argo container inside its image, as a pod would, on a machine with podman but
 * no Kubernetes (and no working OCI runtime): the image's root from `podman image mount`, made
 * read-only, with the container's volumes bound where it mounts them, as uid 1000, through bwrap.
 * Used by tests/argo/images.test.ts; images/build.sh builds the images.
 */
import { existsSync, mkdirSync, readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";

type Container = {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  volumeMounts?: { name: string; mountPath: string; subPath?: string; readOnly?: boolean }[];
  securityContext?: { readOnlyRootFilesystem?: boolean; runAsUser?: number };
};

export type PodRun = { code: number; stdout: string; stderr: string };

const podman = (...args: string[]) => Bun.spawnSync(["podman", ...args], { stdout: "pipe", stderr: "pipe" });

/** Why the in-image tests cannot run here, or null: podman, bwrap and the images must be present. */
export function imagesMissing(images: string[]): string | null {
  if (!Bun.which("podman")) return "podman is not installed (CI installs it and builds the images with images/build.sh)";
  if (!Bun.which("bwrap")) return "bwrap is not installed";
  const absent = images.filter((image) => podman("image", "exists", image).exitCode !== 0);
  return absent.length > 0 ? `images not built: ${absent.join(", ")} (run images/build.sh --clis "" and forge images build, as .ci/run does)` : null;
}

const roots = new Map<string, { root: string; env: string[] }>();

/** The image's root folder (podman image mount) and its ENV. */
export function imageRoot(image: string): { root: string; env: string[] } {
  const known = roots.get(image);
  if (known) return known;
  const mounted = podman("image", "mount", image);
  if (mounted.exitCode !== 0) throw new Error(`podman image mount ${image}: ${mounted.stderr.toString()}`);
  const inspect = podman("image", "inspect", image, "--format", "{{json .Config.Env}}");
  const entry = { root: mounted.stdout.toString().trim(), env: (JSON.parse(inspect.stdout.toString() || "null") as string[] | null) ?? [] };
  roots.set(image, entry);
  return entry;
}

/**
 * bwrap arguments for a read-only root made of the image's entries on a tmpfs, so the pod's mount
 * points can be created as the container runtime creates them (remounted read-only at the end):
 * a folder with a mount point below it that the image lacks is itself a tmpfs holding its entries.
 */
function rootBinds(root: string, mountPaths: string[], dest = ""): string[] {
  const args = dest === "" ? ["--tmpfs", "/"] : ["--tmpfs", dest];
  for (const entry of readdirSync(join(root, dest), { withFileTypes: true })) {
    const path = `${dest}/${entry.name}`;
    if (dest === "" && ["proc", "dev", "sys"].includes(entry.name)) continue;
    const source = join(root, path);
    if (entry.isSymbolicLink()) args.push("--symlink", readlinkSync(source), path);
    else if (entry.isDirectory() && mountPaths.some((m) => m.startsWith(`${path}/`) && !existsSync(join(root, m)))) args.push(...rootBinds(root, mountPaths, path));
    else args.push("--ro-bind", source, path);
  }
  return args;
}

/**
 * Runs one rendered container: its command and args in its image, its env (Secret references
 * given by `secrets`), each volume mount bound from `volumes` (name → host folder; a subPath is a
 * folder under it), as uid 1000 with a read-only root; a container whose securityContext allows a
 * writable root gets a writable /tmp. Network: the host's (the proxy listens on its loopback).
 */
export async function runContainer(container: Container, options: { volumes: Record<string, string>; secrets?: Record<string, string>; timeoutMs?: number; root?: string }): Promise<PodRun> {
  // `root`: a folder standing in for the image (an image the bundle cannot run in).
  const { root, env: imageEnv } = options.root ? { root: options.root, env: [] } : imageRoot(container.image!);
  const args = ["bwrap", "--unshare-user", "--uid", "1000", "--gid", "1000", "--unshare-pid", "--unshare-ipc", "--die-with-parent", ...rootBinds(root, (container.volumeMounts ?? []).map((m) => m.mountPath)), "--proc", "/proc", "--dev", "/dev"];
  const mounted = new Set<string>();
  for (const mount of container.volumeMounts ?? []) {
    const base = options.volumes[mount.name];
    if (!base) throw new Error(`${container.name}: volume ${mount.name} has no host folder`);
    const source = mount.subPath ? join(base, mount.subPath) : base;
    mkdirSync(source, { recursive: true });
    args.push(mount.readOnly ? "--ro-bind" : "--bind", source, mount.mountPath);
    mounted.add(mount.mountPath);
  }
  if (container.securityContext?.readOnlyRootFilesystem === false && !mounted.has("/tmp")) args.push("--tmpfs", "/tmp");
  args.push("--remount-ro", "/", "--clearenv");
  const env: Record<string, string> = {};
  for (const line of imageEnv) env[line.slice(0, line.indexOf("="))] = line.slice(line.indexOf("=") + 1);
  for (const item of container.env ?? []) {
    if (item.value !== undefined) env[item.name] = item.value;
    else if (options.secrets?.[item.name] !== undefined) env[item.name] = options.secrets[item.name]!;
  }
  env.PATH ??= "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const [name, value] of Object.entries(env)) args.push("--setenv", name, value);
  if (container.workingDir) args.push("--chdir", container.workingDir);
  args.push("--", ...(container.command ?? []), ...(container.args ?? []));
  const run = Bun.spawn(args, { stdout: "pipe", stderr: "pipe", timeout: options.timeoutMs ?? 180_000 });
  const [stdout, stderr, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited]);
  return { code, stdout, stderr };
}

/** Replaces Argo's template tags in a rendered template (deeply): `{{inputs.parameters.x}}`, `{{workflow.name}}`, …. */
export function substitute<T>(value: T, tags: Record<string, string>): T {
  return JSON.parse(JSON.stringify(value).replace(/\{\{([^}]+)\}\}/g, (whole, name: string) => (name in tags ? JSON.stringify(tags[name]).slice(1, -1) : whole)));
}
