/**
 * The site sidecar of a browser task's rollout pod (`bun workflows/argo/step.ts site`, gui.ts):
 * forge's site server (workflows/gui/site-server.ts, the local executor's) serving this
 * rollout's task's `site/` on 127.0.0.1:PORT of the pod and recording every request to the
 * `site-log` volume. It runs until the kubelet stops it (SIGTERM once the pod's containers have
 * exited) and then exits 0, so Argo never reads its end as a failure.
 *
 * It never exits early on its own: a native sidecar that exits is restarted, and one that never
 * becomes ready holds the pod's containers back until the pod's deadline. A task it cannot
 * resolve (the plan unreadable) is logged and left to `register`, which meets the same error
 * and reports it as an infrastructure error; a task without `site/` has nothing to serve.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { Experiment } from "../../schemas/index.ts";
import { startSiteServer, type SiteServer } from "../gui/site-server.ts";
import { loadTask } from "./task.ts";

export type SiteSidecar = { server?: SiteServer; note: string; close(): Promise<void> };

/**
 * Starts serving; resolves once it listens (or knows it has nothing to serve) and the ready file
 * (the startup probe's) is written.
 *
 * @example
 * const site = await startSiteSidecar({ experiment, experimentDir: "/experiment", taskId: () => "add-to-cart", stateDir: "/site-log", port: 8000, readyFile: "/tmp/site-ready" });
 * site.server?.url; // "http://127.0.0.1:8000"
 */
export async function startSiteSidecar(options: { experiment: Experiment; experimentDir: string; taskId: () => string; stateDir: string; port: number; readyFile: string }): Promise<SiteSidecar> {
  let server: SiteServer | undefined;
  let note: string;
  try {
    const taskId = options.taskId();
    const { task } = loadTask(options.experiment, options.experimentDir, taskId);
    if (task.siteDir) {
      server = await startSiteServer({ root: task.siteDir, stateDir: options.stateDir, port: options.port });
      note = `serving task ${taskId}'s site at ${server.url}, recording to ${server.log}`;
    } else {
      note = `task ${taskId} has no site/: nothing to serve`;
    }
  } catch (error) {
    // register resolves the same item and fails the same way: it reports the error.
    note = `no site served: ${(error as Error).message}`;
  }
  mkdirSync(dirname(options.readyFile), { recursive: true });
  writeFileSync(options.readyFile, `${note}\n`);
  return { server, note, close: async () => server?.close() };
}
