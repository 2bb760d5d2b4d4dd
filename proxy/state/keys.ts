/** Per-rollout API keys and the admin token: generation, digests, constant-time checks. */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * A new rollout key: `fk-` + 32 random bytes, base64url.
 *
 * @example
 * newApiKey().startsWith("fk-") // true
 */
export function newApiKey(): string {
  return `fk-${randomBytes(32).toString("base64url")}`;
}

/**
 * sha256 hex of a key (what the Rollout record stores instead of the key).
 *
 * @example
 * keySha256("fk-x").length // 64
 */
export function keySha256(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/**
 * Compares two secrets in constant time (over their sha256 digests, so lengths leak nothing).
 *
 * @example
 * secretEquals("a", "a") // true
 */
export function secretEquals(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * Compares a key against a stored sha256 hex digest in constant time.
 *
 * @example
 * keyMatchesSha256("fk-x", keySha256("fk-x")) // true
 */
export function keyMatchesSha256(key: string, sha256Hex: string): boolean {
  const a = createHash("sha256").update(key).digest();
  const b = Buffer.from(sha256Hex, "hex");
  return b.length === a.length && timingSafeEqual(a, b);
}

/**
 * The key a request presents: `Authorization: Bearer KEY` or `x-api-key: KEY`.
 *
 * @example
 * presentedKey(new Headers({ authorization: "Bearer fk-1" })) // "fk-1"
 */
export function presentedKey(headers: Headers): string | undefined {
  const auth = headers.get("authorization");
  if (auth) {
    const match = /^Bearer\s+(.+)$/i.exec(auth.trim());
    if (match) return match[1]!.trim();
  }
  const apiKey = headers.get("x-api-key");
  return apiKey ? apiKey.trim() : undefined;
}
