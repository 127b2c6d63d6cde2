/** URL-token webhooks carry their secret as the last path segment: never log or echo it. */
export function redactUrl(url: string): string {
  return url.replace(/^(\/webhooks\/w\/[^/?#]+\/)[^/?#]+/, '$1[redacted]');
}
