/**
 * A browser task's site for one local rollout. Sandboxed, the site server listens on a unix
 * socket in a private directory, bridged into the rollout's network namespace at
 * 127.0.0.1:SITE_PORT (so every rollout of a task sees the same URL, and no other rollout can
 * reach it); unsandboxed, on a free TCP port of 127.0.0.1. Its request log lies in the rollout's
 * directory, outside every sandbox the harness runs in, and reaches the verifier read-only at
 * SITE_LOG_DIR.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSiteServer } from "./site-server.ts";

/** The site's port inside a rollout's network namespace (the next free one when a proxy has 8000). */
export const SITE_PORT = 8000;

/** Where the verifier's sandbox shows the site's state (`$FORGE_SITE_LOG` is `requests.jsonl` in it). */
export const SITE_LOG_DIR = "/logs/site";

export type RolloutSite = {
  /** The URL the agent opens, `{site_url}` in the instruction. */
  url: string;
  /** The directory of `requests.jsonl`. */
  stateDir: string;
  /** Sandboxed: the socket to bridge and the port it appears at inside. */
  bridge?: { socket: string; port: number };
  close(): Promise<void>;
};

/**
 * @example
 * const site = await startRolloutSite({ siteDir: "tasks/shop/site", stateDir: "rollouts/r1/site", sandboxed: true, takenPorts: [8080] });
 * site.url; // "http://127.0.0.1:8000"
 */
export async function startRolloutSite(options: { siteDir: string; stateDir: string; sandboxed: boolean; takenPorts?: number[] }): Promise<RolloutSite> {
  if (!options.sandboxed) {
    const server = await startSiteServer({ root: options.siteDir, stateDir: options.stateDir });
    return { url: server.url!, stateDir: options.stateDir, close: () => server.close() };
  }
  // A short private path: a unix socket's path is limited to 107 bytes, rollout paths can be longer.
  const socketDir = mkdtempSync(join(tmpdir(), "forge-site-"));
  const socket = join(socketDir, "site.sock");
  let server;
  try {
    server = await startSiteServer({ root: options.siteDir, stateDir: options.stateDir, socket });
  } catch (error) {
    rmSync(socketDir, { recursive: true, force: true });
    throw error;
  }
  let port = SITE_PORT;
  while (options.takenPorts?.includes(port)) port++;
  return {
    url: `http://127.0.0.1:${port}`,
    stateDir: options.stateDir,
    bridge: { socket, port },
    close: async () => {
      await server.close();
      rmSync(socketDir, { recursive: true, force: true });
    },
  };
}
