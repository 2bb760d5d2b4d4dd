/**
 * nginx as a plain reverse proxy in front of one upstream, run in the foreground as a child
 * (config, pid and logs in a temp dir), the C baseline the recording proxy is measured against.
 */
import { mkdirSync, writeFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { spawn, type ChildProcess } from "node:child_process";
import { freePort } from "./free-port.ts";

export interface NginxOptions {
  /** nginx binary. */
  bin: string;
  /** Directory for the config, pid, logs and temp paths (created). */
  dir: string;
  /** `host:port` of the upstream. */
  upstream: string;
  workers?: number;
}

export interface RunningNginx {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** The config: keepalive upstream, no response buffering (SSE chunks pass at once), bodies up to 64 MB held in memory. */
export function nginxConfig(o: { dir: string; upstream: string; port: number; workers: number; root: boolean }): string {
  const d = o.dir;
  return `${o.root ? "user root;\n" : ""}worker_processes ${o.workers};
pid ${d}/nginx.pid;
error_log ${d}/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${d}/tmp/body;
  proxy_temp_path ${d}/tmp/proxy;
  fastcgi_temp_path ${d}/tmp/fastcgi;
  uwsgi_temp_path ${d}/tmp/uwsgi;
  scgi_temp_path ${d}/tmp/scgi;
  client_max_body_size 64m;
  client_body_buffer_size 8m;
  keepalive_requests 1000000;
  upstream policy {
    server ${o.upstream};
    keepalive 512;
  }
  server {
    listen 127.0.0.1:${o.port} reuseport;
    location / {
      proxy_pass http://policy;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 300s;
    }
  }
}
`;
}

/**
 * Writes the config and starts `nginx -c conf -g 'daemon off;'`; resolves once it answers.
 *
 * @example
 * const nginx = await startNginx({ bin: "/usr/sbin/nginx", dir, upstream: "127.0.0.1:8000" });
 * await nginx.stop();
 */
export async function startNginx(options: NginxOptions): Promise<RunningNginx> {
  const port = await freePort();
  for (const sub of ["tmp/body", "tmp/proxy", "tmp/fastcgi", "tmp/uwsgi", "tmp/scgi"]) mkdirSync(join(options.dir, sub), { recursive: true });
  const conf = join(options.dir, "nginx.conf");
  writeFileSync(conf, nginxConfig({ dir: options.dir, upstream: options.upstream, port, workers: options.workers ?? 2, root: process.getuid?.() === 0 }));
  const child: ChildProcess = spawn(options.bin, ["-c", conf, "-p", options.dir, "-g", "daemon off;"], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (b) => (stderr += b));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) {
      let log = "";
      try { log = readFileSync(join(options.dir, "error.log"), "utf8"); } catch {}
      throw new Error(`nginx exited (${child.exitCode}) on start: ${stderr}${log}`);
    }
    try {
      await fetch(`${url}/health`);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`nginx did not answer on ${url} within 10 s: ${stderr}`);
      await Bun.sleep(50);
    }
  }
  return {
    url,
    pid: child.pid!,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGQUIT");
        setTimeout(() => child.kill("SIGKILL"), 3000).unref();
      }),
  };
}
