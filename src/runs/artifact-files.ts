/**
 * Artifacts an agent reports, in the shapes the official clients declare (`ArtifactItem` on a run,
 * `ArtifactResponse` from `GET /agent/artifacts/{uid}`), and the bytes of FILE and SCREENSHOT artifacts with
 * their signed, expiring download URLs.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import path from 'node:path';
import { ulid } from '../kernel/ids.ts';
import { AppError } from '../kernel/errors.ts';

/** Largest file one artifact may carry (the worker protocol carries it base64-encoded in one message). */
export const MAX_ARTIFACT_FILE_BYTES = 8 * 1024 * 1024;
/** How long an artifact's `download_url` works. */
export const ARTIFACT_URL_TTL_MS = 60 * 60 * 1000;
/** The HKDF purpose of the key that signs download URLs. */
export const ARTIFACT_URL_KEY_PURPOSE = 'artifact download urls';

const WITH_FILE = new Set(['FILE', 'SCREENSHOT']);

const MIME_BY_EXTENSION: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.svg': 'image/svg+xml',
  '.md': 'text/markdown',
  '.txt': 'text/plain',
  '.log': 'text/plain',
  '.csv': 'text/csv',
  '.html': 'text/html',
  '.json': 'application/json',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
};

export function guessMimeType(fileName: string): string {
  return MIME_BY_EXTENSION[path.extname(fileName).toLowerCase()] ?? 'application/octet-stream';
}

export interface ArtifactFile {
  artifactUid: string;
  mimeType: string;
  data: Buffer;
}

export interface RecordedArtifact {
  artifact_type: string;
  created_at: string;
  data: Record<string, unknown>;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * An `artifact` event's payload as it is added to the run (the client's ArtifactItem shape), and the bytes
 * of a FILE or SCREENSHOT (`data.content_base64`, taken out of the item). Undefined: not an artifact.
 */
export function recordArtifact(
  event: Record<string, unknown>,
  runId: string,
  now = new Date(),
): { item: RecordedArtifact; file?: ArtifactFile; problem?: string } | undefined {
  const type = text(event.artifact_type);
  if (!type) return undefined;
  const reported = event.data && typeof event.data === 'object' ? (event.data as Record<string, unknown>) : {};
  const { content_base64: content, content_type: contentType, ...data } = reported;
  const uid = text(data.artifact_uid) ?? `art_${ulid()}`;
  data.artifact_uid = uid;
  const item: RecordedArtifact = { artifact_type: type, created_at: now.toISOString(), data };
  if (type === 'PLAN') {
    data.document_uid = text(data.document_uid) ?? uid;
    // Plans are kept with their run: the run is the plan's notebook.
    data.notebook_uid = text(data.notebook_uid) ?? runId;
    return { item };
  }
  if (!WITH_FILE.has(type)) return { item };
  const filepath = text(data.filepath) ?? text(data.filename) ?? (type === 'SCREENSHOT' ? 'screenshot.png' : 'file');
  const mimeType = text(data.mime_type) ?? text(contentType) ?? guessMimeType(filepath);
  data.mime_type = mimeType;
  if (type === 'FILE') {
    data.filepath = filepath;
    data.filename = path.posix.basename(filepath.replaceAll('\\', '/'));
  }
  if (typeof content !== 'string') return { item, problem: `the ${type} artifact ${filepath} carries no content` };
  const compact = content.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact))
    return { item, problem: `the ${type} artifact ${filepath}: content_base64 is not base64` };
  const bytes = Buffer.from(compact, 'base64');
  if (bytes.length > MAX_ARTIFACT_FILE_BYTES)
    return { item, problem: `the ${type} artifact ${filepath} is over ${MAX_ARTIFACT_FILE_BYTES} bytes` };
  if (type === 'FILE') data.size_bytes = bytes.length;
  return { item, file: { artifactUid: uid, mimeType, data: bytes } };
}

function signature(key: Buffer, artifactUid: string, expires: number): string {
  return createHmac('sha256', key).update(`${artifactUid}\n${expires}`).digest('base64url');
}

/** `…/agent/artifacts/{uid}/download?expires=<unix seconds>&signature=<HMAC-SHA256 of uid and expiry>`. */
export function signedDownloadUrl(
  apiBase: string,
  key: Buffer,
  artifactUid: string,
  now = Date.now(),
): { url: string; expiresAt: Date } {
  const expires = Math.floor((now + ARTIFACT_URL_TTL_MS) / 1000);
  const query = new URLSearchParams({ expires: String(expires), signature: signature(key, artifactUid, expires) });
  return {
    url: `${apiBase}/agent/artifacts/${encodeURIComponent(artifactUid)}/download?${query}`,
    expiresAt: new Date(expires * 1000),
  };
}

/** Throws `download_url_invalid` for a signature that does not match, `download_url_expired` past the expiry. */
export function checkDownloadSignature(
  key: Buffer,
  artifactUid: string,
  expires: string | undefined,
  given: string | undefined,
  now = Date.now(),
): void {
  const seconds = expires !== undefined && /^\d{1,12}$/.test(expires) ? Number(expires) : undefined;
  if (seconds === undefined || typeof given !== 'string')
    throw new AppError('download_url_invalid', 'the download URL needs its expires and signature parameters');
  const expected = Buffer.from(signature(key, artifactUid, seconds));
  const actual = Buffer.from(given);
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected))
    throw new AppError('download_url_invalid', 'the download URL signature does not match');
  if (seconds * 1000 < now)
    throw new AppError(
      'download_url_expired',
      `the download URL expired at ${new Date(seconds * 1000).toISOString()}; read the artifact again for a new one`,
    );
}
