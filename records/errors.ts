/**
 * The one error type the recorder throws. The proxy catches it to refuse a call (rather than
 * serve a call it cannot record), so every message names the path and what to do about it.
 */
export type RecorderErrorCode =
  | "LOCKED"
  | "CLOSED"
  | "FAILED"
  | "BAD_RECORD"
  | "BAD_HEADER"
  | "BAD_PAYLOAD"
  /** A reader met damaged bytes and was not told to skip them. */
  | "CORRUPT"
  | "IO";

export class RecorderError extends Error {
  override name = "RecorderError";
  /** What went wrong, for callers that branch on it. */
  readonly code: RecorderErrorCode;
  /** The errno code of the underlying failure (ENOSPC, EACCES, EROFS, ...), when there was one. */
  readonly errno?: string;
  /** The file or directory concerned. */
  readonly path: string;

  constructor(code: RecorderErrorCode, path: string, message: string, options: { cause?: unknown; errno?: string } = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.path = path;
    if (options.errno !== undefined) this.errno = options.errno;
  }
}

const hints: { [errno: string]: string } = {
  ENOSPC: "no space left on the device: free disk space or point --data at a larger volume",
  EDQUOT: "disk quota exceeded: raise the quota or free space",
  EACCES: "permission denied: make the data directory writable by this user",
  EPERM: "operation not permitted: make the data directory writable by this user",
  EROFS: "the file system is read-only: mount the data volume read-write",
  EIO: "I/O error from the device: check the disk (dmesg); records since the last fsync may be lost",
  EFBIG: "file too large for this file system: lower segmentMaxBytes",
  ENOTDIR: "a path component is not a directory: check --data",
  ENOENT: "a path component does not exist: check --data",
  EMFILE: "too many open files: raise the file descriptor limit (ulimit -n)",
};

/**
 * Wraps an fs error as a RecorderError whose message says what failed, where, and the fix.
 *
 * @example
 * try { fs.writevSync(fd, parts, pos) } catch (e) { throw ioError("append to", path, e) }
 */
export function ioError(action: string, path: string, cause: unknown): RecorderError {
  const errno = (cause as NodeJS.ErrnoException | undefined)?.code;
  const hint = errno ? hints[errno] : undefined;
  const what = errno ?? (cause instanceof Error ? cause.message : String(cause));
  const message = `recorder: cannot ${action} ${path}: ${what}${hint ? ` (${hint})` : cause instanceof Error && errno ? ` (${cause.message})` : ""}`;
  return new RecorderError("IO", path, message, errno ? { cause, errno } : { cause });
}
