/** A team's connection to a provider named in a URL, or the 404 that says how to make one. */
import type { ServiceContext } from '../context.ts';
import { AppError } from '../kernel/errors.ts';
import { isProvider, PROVIDERS } from './model.ts';
import type { ConnectionRow, Provider } from './model.ts';
import * as sql from './sql.ts';

export function providerOf(value: string): Provider {
  if (!isProvider(value))
    throw new AppError('resource_not_found', `no integration "${value}"; use one of ${PROVIDERS.join(', ')}`);
  return value;
}

export async function teamConnection(ctx: ServiceContext, teamId: string, provider: Provider): Promise<ConnectionRow> {
  const row = await sql.getConnection(ctx.db, teamId, provider);
  if (!row)
    throw new AppError(
      'resource_not_found',
      `the team has no ${provider} connection; create it with PUT /api/v1/integrations/${provider}`,
    );
  return row;
}
