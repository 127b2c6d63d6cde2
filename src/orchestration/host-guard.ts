/**
 * DNS-rebinding protection for the factory interface: a browser whose page rebinds its own name to this server's
 * address sends that foreign name as `Host` (and as `Origin`). A request is answered only when `Host`, and
 * `Origin` when sent, name this server: a loopback name, the host of one of its public URLs
 * (AGENTYARD_PUBLIC_URL, AGENTYARD_WEBHOOK_BASE_URL), or a name of AGENTYARD_MCP_ALLOWED_HOSTS (the name a reverse
 * proxy forwards). Ports are not compared: a proxy in front may serve another.
 */

const LOOPBACK_NAMES = new Set(['localhost', '::1']);

function isLoopback(hostname: string): boolean {
  return LOOPBACK_NAMES.has(hostname) || hostname.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** The lower-case host name (IPv6 without brackets) of a `Host` header value or a URL; undefined if unparsable. */
function hostnameOf(value: string, isUrl: boolean): string | undefined {
  try {
    const url = new URL(isUrl ? value : `http://${value}`);
    if (!isUrl && (url.pathname !== '/' || url.search || url.username)) return undefined;
    return url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  } catch {
    return undefined;
  }
}

/** The host names this server answers to besides loopback: those of its public URLs, and `extra` names. */
export function ownHostnames(urls: readonly string[], extra: readonly string[] = []): Set<string> {
  const names = new Set<string>(extra.map((h) => h.replace(/^\[(.*)\]$/, '$1').toLowerCase()));
  for (const url of urls) {
    const name = hostnameOf(url, true);
    if (name) names.add(name);
  }
  return names;
}

/** Why the request's `Host` or `Origin` does not name this server, or undefined when both do (or are absent). */
export function foreignHostReason(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  own: ReadonlySet<string>,
): string | undefined {
  const allowed = (name: string | undefined) => name !== undefined && (isLoopback(name) || own.has(name));
  const host = headers.host;
  if (typeof host === 'string' && !allowed(hostnameOf(host, false)))
    return `the Host header (${host.slice(0, 200)}) is not a name of this server (set AGENTYARD_PUBLIC_URL to the address clients use)`;
  const origin = headers.origin;
  if (origin === undefined) return undefined;
  if (typeof origin !== 'string' || !allowed(hostnameOf(origin, true)))
    return `the Origin header (${String(origin).slice(0, 200)}) is not this server`;
  return undefined;
}

/** Verdicts kept per guard; past this many distinct `Host`/`Origin` pairs they are forgotten and found again. */
const MAX_VERDICTS = 256;

/**
 * `foreignHostReason` for one set of own names, its verdict kept per `Host` and `Origin` pair: parsing them as
 * URLs cost more than the rest of the check, and a server is addressed by a handful of names.
 */
export class HostGuard {
  readonly #own: ReadonlySet<string>;
  readonly #verdicts = new Map<string, string | undefined>();

  constructor(own: ReadonlySet<string>) {
    this.#own = own;
  }

  reason(headers: Readonly<Record<string, string | string[] | undefined>>): string | undefined {
    const { host, origin } = headers;
    if (typeof host !== 'string' || (origin !== undefined && typeof origin !== 'string'))
      return foreignHostReason(headers, this.#own);
    // a header value holds no line break, so the pair is one key
    const key = origin === undefined ? host : `${host}\n${origin}`;
    if (this.#verdicts.has(key)) return this.#verdicts.get(key);
    const reason = foreignHostReason(headers, this.#own);
    if (this.#verdicts.size >= MAX_VERDICTS) this.#verdicts.clear();
    this.#verdicts.set(key, reason);
    return reason;
  }
}
