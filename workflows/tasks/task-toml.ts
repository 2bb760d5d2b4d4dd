/**
 * `task.toml` of a Harbor / Terminal-Bench task: the keys Harbor's TaskConfig knows
 * (harbor `src/harbor/models/task/config.py`: version, [task], [metadata], [agent], [verifier],
 * [environment], [solution], source), and OpenForge's `[verifier] reward` / `reward_range`
 * (reward-spec.ts) and `[environment] browser` (the harness gets a headless browser, docs/gui.md). A key outside them is refused with the file and the key,
 * so a typo (`timeout_secs`) is not silently ignored. Keys Harbor knows but the local executor
 * does not use (`docker_image`, `gpus`, ...) are accepted and kept as written; `[metadata]` is
 * free-form.
 */
import { z } from "zod";
import { TaskError } from "./types.ts";

const SECONDS = "must be a positive number of seconds";
const seconds = z.number({ error: SECONDS }).positive({ error: SECONDS });
const network = { network_mode: z.unknown(), allowed_hosts: z.unknown(), user: z.unknown() };

const TaskTomlSchema = z.strictObject({
  version: z.unknown().optional(),
  schema_version: z.unknown().optional(),
  source: z.unknown().optional(),
  task: z.strictObject({ name: z.unknown(), description: z.unknown(), authors: z.unknown(), keywords: z.unknown() }).partial().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  agent: z.strictObject({ timeout_sec: seconds, ...network }).partial().optional(),
  // reward / reward_range are OpenForge's (reward-spec.ts checks their values).
  verifier: z.strictObject({ timeout_sec: seconds, env: z.unknown(), reward: z.unknown(), reward_range: z.unknown(), ...network }).partial().optional(),
  environment: z
    .strictObject({
      build_timeout_sec: z.unknown(),
      docker_image: z.unknown(),
      cpus: z.unknown(),
      memory_mb: z.unknown(),
      storage_mb: z.unknown(),
      gpus: z.unknown(),
      gpu_types: z.unknown(),
      allow_internet: z.unknown(),
      network_mode: z.unknown(),
      allowed_hosts: z.unknown(),
      mcp_servers: z.unknown(),
      env: z.unknown(),
      skills_dir: z.unknown(),
      healthcheck: z.unknown(),
      // Harbor's deprecated spellings of memory_mb / storage_mb, still read by Harbor.
      memory: z.unknown(),
      storage: z.unknown(),
      // OpenForge's: the harness drives a headless browser (docs/gui.md).
      browser: z.boolean({ error: "must be true or false" }),
    })
    .partial()
    .optional(),
  solution: z.strictObject({ env: z.unknown() }).partial().optional(),
});

export type TaskToml = z.infer<typeof TaskTomlSchema>;

/** The keys allowed at `path` (for the message), read from the schema itself. */
function knownKeys(path: PropertyKey[]): string[] {
  let schema: z.ZodType = TaskTomlSchema;
  for (const part of path) {
    while (schema instanceof z.ZodOptional) schema = schema.unwrap() as z.ZodType;
    if (!(schema instanceof z.ZodObject)) return [];
    schema = (schema.shape as Record<string, z.ZodType>)[String(part)]!;
    if (!schema) return [];
  }
  while (schema instanceof z.ZodOptional) schema = schema.unwrap() as z.ZodType;
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

/**
 * Validates a parsed task.toml; errors name the file, the table and the key.
 *
 * @example
 * validateTaskToml({ agent: { timeout_secs: 60 } }, "tasks/a/task.toml");
 * // TaskError: tasks/a/task.toml: [agent] unknown key "timeout_secs" (known: timeout_sec, network_mode, allowed_hosts, user)
 */
export function validateTaskToml(toml: Record<string, unknown>, file: string): TaskToml {
  const parsed = TaskTomlSchema.safeParse(toml);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const table = issue.path.length ? `[${issue.path.map(String).join(".")}] ` : "";
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((key) => `"${key}"`).join(", ");
    throw new TaskError(`${file}: ${table}unknown key${issue.keys.length > 1 ? "s" : ""} ${keys} (known: ${knownKeys(issue.path).join(", ")})`);
  }
  if (issue.code === "invalid_type" && issue.expected === "object") throw new TaskError(`${file}: ${table.trim()} must be a table`);
  throw new TaskError(`${file}: ${issue.path.map(String).join(".")} ${issue.message}, got ${JSON.stringify(valueAt(toml, issue.path))}`);
}

function valueAt(value: unknown, path: PropertyKey[]): unknown {
  let at = value;
  for (const part of path) at = at && typeof at === "object" ? (at as Record<string, unknown>)[String(part)] : undefined;
  return at;
}
