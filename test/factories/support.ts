import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { WebhookRow } from '../../src/factories/apply/model.ts';
import { FACTORIES_CHANGED_TOPIC, WEBHOOKS_CHANGED_TOPIC } from '../../src/kernel/topics.ts';
import type { TestServer } from '../support/server.ts';
import { whenTold } from '../support/signals.ts';
import type { Check } from '../support/signals.ts';
import { createGitRemote } from '../sources/git-fixture.ts';
import type { GitRemote } from '../sources/git-fixture.ts';
import { asFileList, baseFiles } from './fixtures.ts';

export interface GitFactory {
  id: string;
  remote: GitRemote;
  /** Writes files, commits and pushes to `main` (or `branch`); answers the revision. */
  commit(
    files: Record<string, string>,
    message: string,
    options?: { remove?: string[]; branch?: string },
  ): Promise<string>;
  sync(): Promise<any>;
  /** An automatic (poll) reconcile in the server's controller, as the interval would run it. */
  poll(): Promise<any>;
  status(): Promise<any>;
  webhooks(): Promise<any[]>;
  rows(): Promise<WebhookRow[]>;
  applies(): Promise<any[]>;
}

/**
 * Resolves with what `check` answers once it answers a value: asked now and each time the server tells a
 * factory changed (a reconcile recorded: the revision applied or refused; its webhooks changed), never on a timer.
 */
export function whenFactoryTold<T>(server: TestServer, check: Check<T>, what: string, timeoutMs = 15_000): Promise<T> {
  return whenTold(server.server.ctx.bus, [FACTORIES_CHANGED_TOPIC, WEBHOOKS_CHANGED_TOPIC], check, {
    what,
    timeoutMs,
  });
}

let counter = 0;

/** A git factory on a fresh bare repository holding `files` (the valid base tree when omitted) on main. */
export async function createGitFactory(
  server: TestServer,
  files: Record<string, string> = baseFiles(),
  source: Record<string, unknown> = {},
): Promise<GitFactory> {
  const remote = await createGitRemote();
  await remote.write(files);
  await remote.commitAndPush('initial tree', { author: 'Ada Lovelace <ada@example.com>' });
  const created = await server.api('POST', '/factories', {
    name: `git-${++counter}-${Date.now().toString(36)}`,
    source: { type: 'git', url: remote.bare, poll_interval_seconds: 0, ...source },
  });
  expect(created.status, created.text).toBe(201);
  const id = created.body.id as string;
  const controller = server.server.services.controller;
  const factory: GitFactory = {
    id,
    remote,
    async commit(more, message, options = {}) {
      if (options.remove) await remote.remove(...options.remove);
      await remote.write(more);
      const sha = await remote.commitAndPush(message, {
        author: 'Grace Hopper <grace@example.com>',
        ...(options.branch ? { branch: options.branch } : {}),
      });
      return `${options.branch ?? 'main'}@sha1:${sha}`;
    },
    async sync() {
      const res = await server.api('POST', `/factories/${id}/sync`);
      expect(res.status, res.text).toBe(200);
      return res.body;
    },
    poll: () => controller.request(id, 'poll', false),
    async status() {
      return (await server.api('GET', `/factories/${id}`)).body.status;
    },
    async webhooks() {
      return (await server.api('GET', `/factories/${id}/webhooks`)).body.webhooks;
    },
    async rows() {
      return (
        await server.server.ctx.db.query<WebhookRow>(
          'SELECT * FROM webhooks WHERE factory_id = $1 ORDER BY created_at',
          [id],
        )
      ).rows;
    },
    async applies() {
      return (await server.api('GET', `/factories/${id}/applies?limit=100`)).body.applies;
    },
  };
  // Creating the factory starts its loop, which applies the initial tree on its own.
  await whenFactoryTold(
    server,
    async () => {
      const status = await factory.status();
      return Boolean(status.attempted_revision ?? status.source_error);
    },
    'the first reconcile of the new factory',
    20_000,
  );
  return factory;
}

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
