/**
 * `forge images build EXPERIMENT`: the images the experiment's tasks run in on Kubernetes
 * (task-images.ts; docs/argo.md, "Images"). Each task's environment/Dockerfile is built under its
 * content-addressed tag in spec.environment.registry (a folder already built is not built
 * again), a task's `docker_image` is used as given, and with --push the built ones are pushed;
 * with podman, buildah or docker, whichever is installed (or --tool).
 */
import { dirname } from "node:path";
import { parseCommand, UsageError } from "../../lib/index.ts";
import { ExperimentError, parseExperimentFile } from "../../schemas/index.ts";
import { loadExperimentTasks } from "../tasks/index.ts";
import { taskImage, type TaskImage } from "./task-images.ts";

const USAGE = `
usage: forge images build EXPERIMENT [--push] [--tool podman|buildah|docker] [--dry-run] [--json] [-- BUILD-FLAG...]

Builds every task's environment/Dockerfile under REGISTRY:env-HASH (spec.environment.registry;
HASH: the environment folder's content, so the same folder gets the same tag and is built once),
lists the tasks that use their task.toml docker_image as given or spec.environment.image, and
with --push pushes what it built. The rendered rollout pods run each task in that image.

  --push       push the built images (log in to the registry first: podman/docker login)
  --tool T     podman, buildah or docker (default: the first of them installed)
  --dry-run    print what would be built, build nothing
  --json       print the tasks' images as JSON
  -- FLAGS     passed to the build command, e.g. -- --isolation chroot --network host
`;

const TOOLS = ["podman", "buildah", "docker"] as const;
type Tool = (typeof TOOLS)[number];

function run(argv: string[], inherit = true): { code: number; output: string } {
  const child = Bun.spawnSync(argv, { stdout: inherit ? "inherit" : "pipe", stderr: inherit ? "inherit" : "pipe" });
  return { code: child.exitCode ?? 1, output: inherit ? "" : `${child.stdout?.toString() ?? ""}${child.stderr?.toString() ?? ""}` };
}

/** Whether the tool has the image locally (a content-addressed tag that exists was built from that content). */
function imageExists(tool: Tool, image: string): boolean {
  const argv = tool === "buildah" ? ["buildah", "inspect", "--type", "image", image] : tool === "podman" ? ["podman", "image", "exists", image] : ["docker", "image", "inspect", image];
  return run(argv, false).code === 0;
}

export type ImagePlanEntry = { task_id: string; source: TaskImage["kind"]; image: string; context?: string };

/**
 * `forge images build`.
 *
 * @example
 * await imagesCommand(["build", "examples/harbor-images/experiment.yaml", "--dry-run"]);
 */
export async function imagesCommand(argv: string[]): Promise<number> {
  const dashes = argv.indexOf("--");
  const buildFlags = dashes >= 0 ? argv.slice(dashes + 1) : [];
  const args = parseCommand(
    { name: "images", usage: USAGE, allowPositionals: true, options: { push: { type: "boolean" }, tool: { type: "string" }, "dry-run": { type: "boolean" }, json: { type: "boolean" } } },
    dashes >= 0 ? argv.slice(0, dashes) : argv,
  );
  if (!args) return 0;
  const [verb, path, ...extra] = args.positionals;
  if (verb !== "build") throw new UsageError(`forge images: expected "build"${verb ? `, got "${verb}"` : ""}\n\n${USAGE.trim()}`);
  if (!path || extra.length > 0) throw new UsageError(`forge images build: expected one EXPERIMENT file\n\n${USAGE.trim()}`);
  let experiment;
  try {
    experiment = parseExperimentFile(path);
  } catch (error) {
    if (error instanceof ExperimentError) throw new UsageError(error.message);
    throw error;
  }
  const tool = (args.values.tool ?? TOOLS.find((candidate) => Bun.which(candidate))) as Tool | undefined;
  if (args.values.tool && !TOOLS.includes(args.values.tool as Tool)) throw new UsageError(`forge images build: --tool ${args.values.tool}: expected podman, buildah or docker`);
  const entries: ImagePlanEntry[] = loadExperimentTasks(experiment, dirname(path)).map((task) => {
    const image = taskImage(experiment, task);
    return { task_id: task.id, source: image.kind, image: image.image, ...(image.kind === "dockerfile" ? { context: image.context } : {}) };
  });
  const builds = new Map<string, string>();
  for (const entry of entries) if (entry.context) builds.set(entry.image, entry.context);
  if (!args.values["dry-run"] && builds.size > 0) {
    if (!tool || !Bun.which(tool)) throw new Error(`none of podman, buildah or docker is installed${args.values.tool ? ` (--tool ${args.values.tool})` : ""}: install one to build the tasks' images`);
    for (const [image, context] of builds) {
      if (imageExists(tool, image)) {
        console.error(`${image}: already built (same environment folder)`);
      } else {
        console.error(`${image}: building ${context}`);
        const build = tool === "docker" ? ["docker", "build"] : [tool, "build"];
        const built = run([...build, ...buildFlags, "-f", `${context}/Dockerfile`, "-t", image, context]);
        if (built.code !== 0) throw new Error(`${context}/Dockerfile: ${tool} build failed (exit ${built.code}); its output is above`);
      }
      if (args.values.push) {
        const pushed = run([tool, "push", image]);
        if (pushed.code !== 0) throw new Error(`${image}: ${tool} push failed (exit ${pushed.code}); are you logged in to the registry?`);
      }
    }
  }
  if (args.values.json) console.log(JSON.stringify(entries, null, 2));
  else for (const entry of entries) console.log(`${entry.task_id}\t${entry.source}\t${entry.image}`);
  return 0;
}
