/**
 * The headers of every HTML page the server renders (the console and the `/sessions/…` pages): no inline code,
 * nothing from other hosts, never framed, no sniffing.
 */
export const PAGE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': PAGE_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};

/**
 * Why a form post is not from a page of this server, or undefined when it is (or when the client sent
 * neither header, as non-browser clients do: a browser always sends `Origin` on a cross-site POST).
 * `Sec-Fetch-Site` must be `same-origin`; `Origin` must be this server as the request addressed it or as its
 * public URL names it.
 */
export function crossSiteReason(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  publicUrl: string,
): string | undefined {
  const site = headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return `Sec-Fetch-Site is ${String(site)}`;
  const origin = headers.origin;
  if (origin === undefined) return undefined;
  if (typeof origin !== 'string' || origin === 'null') return 'Origin is opaque';
  let given: URL;
  try {
    given = new URL(origin);
  } catch {
    return 'Origin is not a URL';
  }
  if (given.host === headers.host) return undefined;
  try {
    if (given.origin === new URL(publicUrl).origin) return undefined;
  } catch {
    // no usable public URL: only the Host header counts
  }
  return `Origin ${given.origin} is not this server`;
}
