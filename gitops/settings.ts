/**
 * Per-repo GitOps settings (`openforge.gitops.json`): how the cluster reaches the repo
 * and how a commit is run locally. Validated with zod; errors name the file and field.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { SETTINGS_FILE } from "./layout.ts";

export const GitopsSettingsSchema = z
  .object({
    /** The URL Argo CD and Argo Events use to reach this repo. */
    repoURL: z.string().min(1).default("https://git.example.com/org/experiments.git"),
    /** The branch that triggers runs. */
    branch: z.string().min(1).default("main"),
    /** Namespace the workflows and the proxy run in. */
    namespace: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/).default("openforge"),
    /** Namespace Argo CD is installed in. */
    argocdNamespace: z.string().default("argocd"),
    /** Namespace Argo Events (EventSource, Sensor) is installed in. */
    eventsNamespace: z.string().default("argo-events"),
    /** `github` registers a GitHub webhook; `webhook` is a plain endpoint any git server can call. */
    eventSource: z.enum(["github", "webhook"]).default("webhook"),
    /** For `github`: owner and repository name. */
    github: z.object({ owner: z.string(), repository: z.string() }).strict().optional(),
    /** How the local trigger runs a changed experiment. */
    executor: z.enum(["local", "argo"]).default("local"),
  })
  .strict();

export type GitopsSettings = z.infer<typeof GitopsSettingsSchema>;

export class GitopsSettingsError extends Error {
  override name = "GitopsSettingsError";
}

/**
 * Reads the repo's settings, defaults when the file is absent.
 *
 * @example
 * const settings = readGitopsSettings(repo); settings.branch // "main"
 */
export function readGitopsSettings(repo: string): GitopsSettings {
  const path = join(repo, SETTINGS_FILE);
  if (!existsSync(path)) return GitopsSettingsSchema.parse({});
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new GitopsSettingsError(`${path}: not valid JSON: ${(error as Error).message}`);
  }
  const parsed = GitopsSettingsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new GitopsSettingsError(`${path}: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
  }
  if (parsed.data.eventSource === "github" && !parsed.data.github) {
    throw new GitopsSettingsError(`${path}: github: required when eventSource is "github" ({"owner": ..., "repository": ...})`);
  }
  return parsed.data;
}
