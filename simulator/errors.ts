/** OpenAI-style error bodies, shaped as vLLM sends them (`code` is the HTTP status). */
import type { z } from "zod";

export function errorResponse(status: number, message: string, param: string | null = null): Response {
  const type = status === 404 ? "NotFoundError" : status === 400 ? "BadRequestError" : "InternalServerError";
  return Response.json({ error: { message, type, param, code: status } }, { status, headers: { "x-forge-simulator": "1" } });
}

/** One line per zod issue, naming the field: `messages[0].role: expected one of …`. */
export function describeIssues(error: z.ZodError): { message: string; param: string | null } {
  const lines = error.issues.map((issue) => {
    const field = issue.path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join("");
    return `${field || "body"}: ${issue.message}`;
  });
  const first = error.issues[0]?.path.map(String).join(".") || null;
  return { message: `policy simulator: invalid request: ${lines.join("; ")}`, param: first };
}
