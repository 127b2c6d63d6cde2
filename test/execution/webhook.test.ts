/**
 * From a commit to a finished run: a managed factory applies a webhook and an automation; a delivery to the
 * webhook starts a run through the automation; an executor runs it (the `command` harness on a fake agent),
 * with the delivery's body in its workspace as `event-payload.json`, and the run ends SUCCEEDED.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { automationMd, baseFiles } from '../support/factory-tree.ts';
import { request } from '../support/server.ts';
import { executionsOf, FAKE, fakeRecords, startExecServer, waitForState, whenRunsTold } from './support.ts';
import type { ExecServer } from './support.ts';

const SKILL = `---
name: triage
description: How to triage an alert.
---

Read event-payload.json, then decide.
`;

describe.each(ENGINES)('a webhook delivery through a committed automation on %s', (engine) => {
  let s: ExecServer;
  beforeAll(async () => {
    s = await startExecServer(engine, {
      settings: { harnesses: ['command'], defaultHarness: 'command', bins: { ...FAKE } },
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('ends in a SUCCEEDED run whose workspace held event-payload.json', async () => {
    expect((await s.api('PUT', '/secrets/alerts-token', { value: 'tok-0123456789' })).status).toBeLessThan(300);
    const factory = await s.api('POST', '/factories', { name: 'alerts', source: { type: 'managed' } });
    expect(factory.status, factory.text).toBe(201);
    const id = factory.body.id as string;
    const files = (extra: Record<string, string>) =>
      Object.entries({
        ...baseFiles(),
        'skills/triage/SKILL.md': SKILL,
        'webhooks/alerts.yaml': 'authMode: token\nsecretName: alerts-token\n',
        ...extra,
      }).map(([p, content]) => ({ path: p, content }));
    const first = await s.api('POST', `/factories/${id}/apply`, { files: files({}), message: 'webhook' });
    expect(first.status, first.text).toBe(200);
    const [hook] = (await s.api('GET', `/factories/${id}/webhooks`)).body.webhooks;
    const second = await s.api('POST', `/factories/${id}/apply`, {
      files: files({
        'automations/triage/automation.md': automationMd(hook.uid, {
          payload: 'severity: [critical]',
          prompt: 'Investigate the alert. LIST_FILES',
        }),
      }),
      message: 'automation',
    });
    expect(second.status, second.text).toBe(200);

    const body = JSON.stringify({ severity: 'critical', title: 'Disk full on db-1' });
    const delivered = await request(hook.ingress_url, {
      method: 'POST',
      body,
      headers: { authorization: 'Bearer tok-0123456789', 'content-type': 'application/json' },
    });
    expect(delivered.status, delivered.text).toBe(202);
    const deliveryId = delivered.body.delivery_id as string;

    const runId = await whenRunsTold(s, 'the run of the delivery', async () => {
      const res = await s.server.ctx.db.query<{ id: string }>('SELECT id FROM runs WHERE delivery_id = $1', [
        deliveryId,
      ]);
      return res.rows[0]?.id;
    });
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(run.state, JSON.stringify(run.status_message)).toBe('SUCCEEDED');
    expect(run.source).toBe('API');
    expect(run.source_detail).toBe('WEBHOOK');
    const [execution] = await executionsOf(s, runId);
    const rec = fakeRecords(execution!.workspace!)[0];
    expect(rec.files).toContain('event-payload.json');
    expect(readFileSync(path.join(execution!.workspace!, 'event-payload.json'), 'utf8')).toBe(body);
    expect(rec.document.prompt).toContain('Investigate the alert.');
    expect(rec.document.prompt).toContain(`Delivery ID: ${deliveryId}`);
    expect(rec.document.prompt).toContain('Files attached to this run, in the working directory: event-payload.json.');
    expect(rec.document.base_prompt).toContain('You are the on-call foreman.');
    expect(run.status_message.message).toContain('event-payload.json');
  });

  it("resolves a run's skill from the factory's skills/ into the workspace, and says so when it cannot", async () => {
    const runId = (await s.api('POST', '/agent/runs', { prompt: 'Triage LIST_FILES', skill: 'acme/api:triage' })).body
      .run_id as string;
    const run = await waitForState(s, runId, ['SUCCEEDED', 'FAILED', 'ERROR']);
    expect(run.state).toBe('SUCCEEDED');
    const [execution] = await executionsOf(s, runId);
    expect(readFileSync(path.join(execution!.workspace!, '.agents/skills/triage/SKILL.md'), 'utf8')).toBe(SKILL);
    const rec = fakeRecords(execution!.workspace!)[0];
    expect(rec.document.skill).toEqual({
      spec: 'acme/api:triage',
      name: 'triage',
      path: '.agents/skills/triage/SKILL.md',
    });
    expect(rec.document.prompt).toContain('read .agents/skills/triage/SKILL.md');
    const blocks = (await s.api('GET', `/agent/runs/${runId}/conversation`)).body.steps[0].messages.flatMap(
      (m: { content: unknown[] }) => m.content,
    );
    expect(blocks).toContainEqual(
      expect.objectContaining({
        type: 'action',
        category: 'skill',
        name: 'read_skill',
        input: expect.objectContaining({ skill_path: '.agents/skills/triage/SKILL.md' }),
      }),
    );
    expect(blocks).toContainEqual(
      expect.objectContaining({ type: 'action_result', name: 'read_skill', state: 'completed' }),
    );

    const missing = (await s.api('POST', '/agent/runs', { prompt: 'Triage', skill: 'acme/api:nope' })).body
      .run_id as string;
    expect((await waitForState(s, missing, ['SUCCEEDED', 'FAILED', 'ERROR'])).state).toBe('SUCCEEDED');
    const [other] = await executionsOf(s, missing);
    const doc = fakeRecords(other!.workspace!)[0].document;
    expect(doc.skill).toMatchObject({
      spec: 'acme/api:nope',
      unresolved: expect.stringContaining('skills/nope/SKILL.md'),
    });
    expect(doc.prompt).toContain('could not be provided');
  });
});
