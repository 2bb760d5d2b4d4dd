/** Finds (and where allowed, installs from Debian) the C tools the nginx bench compares against. */
import { spawnSync } from "node:child_process";

/** Path of `name` on PATH or in /usr/sbin (where Debian puts nginx), or null. */
export function whichTool(name: string): string | null {
  const r = spawnSync("sh", ["-c", `command -v ${name} || ls /usr/sbin/${name} 2>/dev/null`], { encoding: "utf8" });
  const path = r.stdout.trim().split("\n")[0];
  return path ? path : null;
}

/**
 * Returns the paths of nginx and wrk, installing the Debian packages with apt-get when they are
 * missing and we are root. Throws naming the package and the command to run otherwise.
 *
 * @example
 * const { nginx, wrk } = ensureTools();
 */
export function ensureTools(log: (line: string) => void = console.error): { nginx: string; wrk: string } {
  const missing = ["nginx", "wrk"].filter((t) => whichTool(t) === null);
  if (missing.length > 0) {
    if (process.getuid?.() !== 0) {
      throw new Error(`bench/nginx: ${missing.join(", ")} not installed; run: sudo apt-get install -y ${missing.join(" ")}`);
    }
    log(`installing ${missing.join(", ")} from Debian (apt-get) …`);
    const update = spawnSync("apt-get", ["update"], { stdio: "ignore" });
    const install = spawnSync("apt-get", ["install", "-y", ...missing], { stdio: "ignore", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
    if (update.status !== 0 || install.status !== 0) {
      throw new Error(`bench/nginx: apt-get install -y ${missing.join(" ")} failed (exit ${install.status}); install them by hand`);
    }
  }
  return { nginx: whichTool("nginx")!, wrk: whichTool("wrk")! };
}
