/** SQL text for the DuckDB queries of the export and analytics. */

/**
 * Quotes a string as a SQL literal.
 *
 * @example
 * sqlString("it's") // "'it''s'"
 */
export function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
