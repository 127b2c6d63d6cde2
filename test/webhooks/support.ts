import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { TestServer } from '../support/server.ts';
import { asFileList, baseFiles } from '../factories/fixtures.ts';

let counter = 0;

/** A managed factory (POST /factories with a name only) holding the valid base tree. */
export async function createManagedFactory(server: TestServer): Promise<string> {
  const created = await server.api('POST', '/factories', {
    name: `managed-${++counter}-${randomBytes(3).toString('hex')}`,
  });
  expect(created.status, created.text).toBe(201);
  const applied = await server.api('POST', `/factories/${created.body.id}/apply`, {
    files: asFileList(baseFiles()),
    message: 'base files',
  });
  expect(applied.status, applied.text).toBe(200);
  return created.body.id as string;
}
