/**
 * `forge sql`: DuckDB over a data directory (compacted first, with the views and macros of
 * `forge analyze`) or over a database file written by `forge analyze --db`, from a terminal:
 * one statement from the command line, a script on stdin, or an interactive prompt.
 */
import { existsSync, statSync } from "node:fs";
import { createInterface } from "node:readline";
import { DuckDBInstance, type DuckDBConnection } from "@duckdb/node-api";
import type { Json } from "@duckdb/node-api";
import { openAnalytics } from "./session.ts";

export type SqlFormat = "table" | "csv" | "json";

export type SqlSource = { connection: DuckDBConnection; describe: string; close(): void };

/**
 * Opens a data directory (compacting new segments, defining the views) or a `.duckdb` file
 * (read-only; its views and macros are stored in it).
 *
 * @example
 * const source = await openSqlSource(".forge/runs/quickstart-20260101-120000");
 */
export async function openSqlSource(path: string): Promise<SqlSource> {
  if (!existsSync(path)) throw new Error(`${path}: no such data directory or database file`);
  if (statSync(path).isDirectory()) {
    const session = await openAnalytics(path, {});
    return { connection: session.connection, describe: `data directory ${path}`, close: () => session.close() };
  }
  const instance = await DuckDBInstance.create(path, { access_mode: "READ_ONLY" });
  const connection = await instance.connect();
  return {
    connection,
    describe: `database ${path}`,
    close() {
      connection.closeSync();
      instance.closeSync();
    },
  };
}

function cellText(value: Json): string {
  if (value === null) return "NULL";
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}

function csvCell(value: Json): string {
  const text = value === null ? "" : cellText(value);
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * Formats a result: an aligned table (long cells cut at 60 characters, at most `maxRows` rows),
 * CSV, or one JSON object per line.
 *
 * @example
 * formatResult(["n"], [[3]], "table", 100) // " n\n--\n 3\n(1 row)"
 */
export function formatResult(columns: string[], rows: Json[][], format: SqlFormat, maxRows: number): string {
  if (format === "csv") return [columns.map((c) => csvCell(c)).join(","), ...rows.map((row) => row.map(csvCell).join(","))].join("\n");
  if (format === "json") return rows.map((row) => JSON.stringify(Object.fromEntries(columns.map((c, i) => [c, row[i] ?? null])))).join("\n");
  if (columns.length === 0) return "ok";
  const shown = rows.slice(0, maxRows).map((row) => row.map((value) => {
    const text = cellText(value).replaceAll("\n", "\\n");
    return text.length > 60 ? `${text.slice(0, 59)}…` : text;
  }));
  const numeric = columns.map((_, i) => rows.every((row) => row[i] === null || typeof row[i] === "number"));
  const widths = columns.map((column, i) => Math.max(column.length, ...shown.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => (numeric[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join("  ").trimEnd();
  const more = rows.length > maxRows ? `\n(${rows.length} rows, first ${maxRows} shown; --max-rows N or --csv for all)` : `\n(${rows.length} row${rows.length === 1 ? "" : "s"})`;
  return [line(columns), widths.map((w) => "-".repeat(w)).join("  "), ...shown.map(line)].join("\n") + more;
}

/**
 * Runs every statement of `text` in order and returns each one's formatted result. A failing
 * statement throws with its number and DuckDB's message.
 *
 * @example
 * await runStatements(connection, "SELECT 1 AS a; SELECT 2 AS b;", "table", 100) // ["a\n-\n1\n(1 row)", "b\n-\n2\n(1 row)"]
 */
export async function runStatements(connection: DuckDBConnection, text: string, format: SqlFormat, maxRows: number): Promise<string[]> {
  const statements = await connection.extractStatements(text);
  const out: string[] = [];
  for (let i = 0; i < statements.count; i++) {
    let reader;
    try {
      reader = await (await statements.prepare(i)).runAndReadAll();
    } catch (error) {
      throw new Error(statements.count > 1 ? `statement ${i + 1}: ${(error as Error).message}` : (error as Error).message);
    }
    out.push(formatResult(reader.columnNames(), reader.getRowsJson(), format, maxRows));
  }
  return out;
}

const tablesSql = `SELECT table_name AS name, lower(table_type) AS kind FROM information_schema.tables
  WHERE table_schema = 'main' ORDER BY table_type DESC, table_name`;

/**
 * The interactive prompt: statements end with `;` (several lines are joined); `.tables` lists
 * the views and tables, `.quit` leaves. Errors are printed and the prompt goes on.
 *
 * @example
 * await repl(source, "table", 200, process.stdin, process.stdout);
 */
export async function repl(source: SqlSource, format: SqlFormat, maxRows: number, input: NodeJS.ReadableStream, output: NodeJS.WritableStream): Promise<void> {
  const rl = createInterface({ input, output, prompt: "forge> ", terminal: (input as { isTTY?: boolean }).isTTY === true });
  const say = (text: string) => output.write(`${text}\n`);
  // Input may end (a pipe, Ctrl-D) while lines are still being answered: no prompt after that.
  let closed = false;
  rl.on("close", () => (closed = true));
  const prompt = (text: string) => {
    if (closed) return;
    rl.setPrompt(text);
    rl.prompt();
  };
  say(`DuckDB over ${source.describe}. Statements end with ";". .tables lists views and tables, .help, .quit.`);
  let buffer = "";
  prompt("forge> ");
  for await (const line of rl) {
    const trimmed = line.trim();
    if (buffer === "" && trimmed.startsWith(".")) {
      if (trimmed === ".quit" || trimmed === ".exit") break;
      if (trimmed === ".tables") say(formatResult(["name", "kind"], (await source.connection.runAndReadAll(tablesSql)).getRowsJson(), format, 1000));
      else say('commands: .tables, .quit; anything else is SQL ending with ";" (e.g. SELECT * FROM tasks;)');
      prompt("forge> ");
      continue;
    }
    buffer += `${line}\n`;
    if (!trimmed.endsWith(";")) {
      prompt("   ...> ");
      continue;
    }
    try {
      for (const result of await runStatements(source.connection, buffer, format, maxRows)) say(result);
    } catch (error) {
      say(`error: ${(error as Error).message}`);
    }
    buffer = "";
    prompt("forge> ");
  }
  rl.close();
}
