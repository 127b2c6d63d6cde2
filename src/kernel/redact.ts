/** URL-token webhooks carry their secret as the last path segment: never log or echo it. */
export function redactUrl(url: string): string {
  return url.replace(/^(\/webhooks\/w\/[^/?#]+\/)[^/?#]+/, '$1[redacted]');
}

/** A request's path as errors and logs may show it: without the query string, a URL token redacted. */
export function redactedPath(url: string): string {
  return redactUrl(url.split('?')[0] ?? url);
}
