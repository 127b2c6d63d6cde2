import { AppError } from '../kernel/errors.ts';
import type { SourceSpec } from './types.ts';
import { classifyGitUrl } from './url.ts';
import { parseGitEndpoint, refusedHostMessage } from './url-policy.ts';
import type { SourceUrlPolicy } from './url-policy.ts';

/** The one answer for a local source from a team key: the same whatever the path is, exists or not. */
export const LOCAL_SOURCE_REFUSED =
  'source: local paths, file:// URLs and directory sources read the server host: only instance admins may use them; use an https:// or ssh:// git URL';

/**
 * Who may register which source: teams use https:// and ssh:// git URLs to hosts that resolve only to public
 * addresses (or hosts the instance admin allows); local paths, file://, http:// and directory sources are for
 * instance admins. A host that does not resolve now is accepted: the same check runs before every fetch.
 */
export async function authorizeSource(
  source: SourceSpec,
  options: { instanceAdmin: boolean },
  policy: SourceUrlPolicy,
): Promise<void> {
  if (source.type === 'managed') return;
  if (source.type === 'directory') {
    if (!options.instanceAdmin) throw new AppError('not_authorized', LOCAL_SOURCE_REFUSED);
    return;
  }
  const kind = classifyGitUrl(source.url);
  if (kind === 'local' || kind === 'file') {
    if (!options.instanceAdmin) throw new AppError('not_authorized', LOCAL_SOURCE_REFUSED);
    return;
  }
  if (kind === 'http' && !options.instanceAdmin)
    throw new AppError(
      'not_authorized',
      'source.url: plain http:// is for instance admins; use an https:// or ssh:// URL',
    );
  if (!kind) throw new AppError('invalid_request', 'source.url: use an https://, ssh:// or user@host:path git URL');
  // Fails closed: a host that cannot be read is refused like an internal one, with the same answer.
  const parsed = parseGitEndpoint(source.url, kind);
  if (parsed.kind === 'local') return;
  if (parsed.kind === 'unparseable') throw new AppError('invalid_request', refusedHostMessage(parsed.host));
  const checked = await policy.check(parsed.endpoint);
  if (!checked.ok && checked.reason !== 'unresolved')
    throw new AppError('invalid_request', refusedHostMessage(parsed.endpoint.host));
}
