#!/usr/bin/env bun
/**
 * The `forge` CLI: dispatches `forge COMMAND ...` to the area that owns it.
 * No logic lives here; each area's cli.ts exports its commands.
 */
import { UsageError } from "../lib/index.ts";

type Command = (argv: string[]) => Promise<number>;
type CommandTable = Record<string, { summary: string; load: () => Promise<Command> }>;

const commands: CommandTable = {
  proxy: { summary: "run the recording proxy", load: async () => (await import("../proxy/cli.ts")).proxyCommand },
  "policy-sim": {
    summary: "run the policy simulator (a stand-in for the model, for tests and the quickstart)",
    load: async () => (await import("../simulator/cli.ts")).policySimCommand,
  },
  demo: {
    summary: "start the simulator and the proxy and send one recorded call through them",
    load: async () => (await import("../workflows/cli.ts")).demoCommand,
  },
  run: { summary: "run an experiment end to end", load: async () => (await import("../workflows/cli.ts")).runCommand },
  render: { summary: "print an experiment's Kubernetes manifests", load: async () => (await import("../workflows/cli.ts")).renderCommand },
  submit: { summary: "submit an experiment to Argo Workflows", load: async () => (await import("../workflows/cli.ts")).submitCommand },
  watch: { summary: "follow a submitted workflow", load: async () => (await import("../workflows/cli.ts")).watchCommand },
  images: { summary: "build and push the images the tasks run in (images build)", load: async () => (await import("../workflows/cli.ts")).imagesCommand },
  export: { summary: "export trajectories (verl | sft | jsonl)", load: async () => (await import("../trajectories/cli.ts")).exportCommand },
  analyze: { summary: "metrics and reports over a data dir", load: async () => (await import("../analytics/cli.ts")).analyzeCommand },
  sql: { summary: "query a data dir or analytics database with DuckDB SQL", load: async () => (await import("../analytics/cli.ts")).sqlCommand },
  gitops: { summary: "experiments in a git repo", load: async () => (await import("../gitops/cli.ts")).gitopsCommand },
};

function usage(): string {
  const width = Math.max(...Object.keys(commands).map((name) => name.length));
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `usage: forge COMMAND [--help] ...\n\ncommands:\n${lines.join("\n")}`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h") {
    console.log(usage());
    return name ? 0 : 2;
  }
  const entry = commands[name];
  if (!entry) {
    console.error(`forge: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  try {
    return await (await entry.load())(rest);
  } catch (error) {
    if (error instanceof UsageError) {
      // Every message says which command refused what (some are thrown deep, without the name).
      console.error(error.message.startsWith("forge ") ? error.message : `forge ${name}: ${error.message}`);
      return 2;
    }
    console.error(`forge ${name}: ${(error as Error).message}`);
    return 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
