import type { FactoryFileInput } from './load.ts';

/** The caps the product's client applies to a dry-run validation; the server enforces them too. */
export const VALIDATE_LIMITS = { files: 256, fileBytes: 256 * 1024, totalBytes: 2 * 1024 * 1024 } as const;

/** Why a validate request body is refused before validation: an API error code, its detail, the file. */
export interface RequestProblem {
  code: 'invalid_json' | 'invalid_request' | 'payload_too_large';
  detail: string;
  /** The file a `payload_too_large` refusal names (an `FF_LIMIT_EXCEEDED` diagnostic in the answer). */
  path?: string;
}

/** Checks the request's files against the caps, naming the file. */
export function requestLimitProblem(files: readonly FactoryFileInput[]): RequestProblem | undefined {
  let total = 0;
  for (const [i, file] of files.entries()) {
    const path = file.path;
    if (path === '' || path.startsWith('/') || path.split(/[\\/]/).includes('..')) {
      return {
        code: 'invalid_request',
        detail: `files[${i}].path must be a relative path inside the factory, got "${path}"`,
      };
    }
    if (i === VALIDATE_LIMITS.files) {
      return {
        code: 'payload_too_large',
        path,
        detail: `files[${i}] (${path}): at most ${VALIDATE_LIMITS.files} files per request, got ${files.length}`,
      };
    }
    const bytes = Buffer.byteLength(file.content, 'utf8');
    if (bytes > VALIDATE_LIMITS.fileBytes) {
      return {
        code: 'payload_too_large',
        path,
        detail: `files[${i}] (${path}) is ${bytes} bytes; at most ${VALIDATE_LIMITS.fileBytes / 1024} KiB per file`,
      };
    }
    total += bytes;
    if (total > VALIDATE_LIMITS.totalBytes) {
      return {
        code: 'payload_too_large',
        path,
        detail: `files[${i}] (${path}) brings the request to ${total} bytes; at most ${VALIDATE_LIMITS.totalBytes / (1024 * 1024)} MiB per request`,
      };
    }
  }
  return undefined;
}

/**
 * The `files` of a validate request body (JSON text), or why it is refused. Runs on a pool worker, so that a
 * 2 MiB body is parsed off the event loop.
 */
export function parseValidateRequest(text: string): { files: FactoryFileInput[] } | { problem: RequestProblem } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    return { problem: { code: 'invalid_json', detail: (err as Error).message } };
  }
  const invalid = (detail: string) => ({ problem: { code: 'invalid_request' as const, detail } });
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return invalid('body must be an object');
  const files = (body as { files?: unknown }).files;
  if (!Array.isArray(files)) return invalid("body must have required property 'files' (an array)");
  const out: FactoryFileInput[] = [];
  for (const [i, file] of files.entries()) {
    if (typeof file !== 'object' || file === null) return invalid(`files[${i}] must be an object`);
    const { path, content } = file as { path?: unknown; content?: unknown };
    if (typeof path !== 'string') return invalid(`files[${i}] must have required property 'path' (a string)`);
    if (typeof content !== 'string') return invalid(`files[${i}] must have required property 'content' (a string)`);
    out.push({ path, content });
  }
  const problem = requestLimitProblem(out);
  return problem ? { problem } : { files: out };
}
