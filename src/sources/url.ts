/** Removes credentials from a URL or a message holding URLs, so that neither reaches a log or a status. */
export function sanitizeUrl(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1***@');
}

/** Removes a known secret value (and URLs' user info) from a message. */
export function sanitizeMessage(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = sanitizeUrl(text);
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join('***');
  }
  return out;
}

export type GitUrlKind = 'https' | 'http' | 'ssh' | 'file' | 'local';

/** Transports a git source may use. `ext::`, `fd::` and other remote helpers are refused: they run commands. */
export function classifyGitUrl(url: string): GitUrlKind | undefined {
  if (/^https:\/\//i.test(url)) return 'https';
  if (/^http:\/\//i.test(url)) return 'http';
  if (/^(ssh|git\+ssh):\/\//i.test(url)) return 'ssh';
  if (/^file:\/\//i.test(url)) return 'file';
  if (/^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!\/\/)/.test(url)) return 'ssh';
  if (url.includes('::')) return undefined;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return undefined;
  if (url.startsWith('/') || url.startsWith('./') || url.startsWith('../')) return 'local';
  return undefined;
}
