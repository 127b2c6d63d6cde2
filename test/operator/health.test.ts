import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES } from '../support/db.ts';
import { request, startTestServer } from '../support/server.ts';
import type { TestServer } from '../support/server.ts';

describe.each(ENGINES)('health and metrics on %s', (engine) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  it('/healthz and /readyz answer 200 with the database reachable', async () => {
    expect((await request(`${s.url}/healthz`)).status).toBe(200);
    const ready = await request(`${s.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ok', checks: { database: 'ok' } });
  });

  it('/readyz answers 503 naming a failing check, and 200 once it passes', async () => {
    let why: string | undefined = 'informer factories not synced';
    const remove = s.server.services.readiness.add('informers', () => why);
    try {
      const down = await request(`${s.url}/readyz`);
      expect(down.status).toBe(503);
      expect(down.body.checks.informers).toBe('informer factories not synced');
      why = undefined;
      expect((await request(`${s.url}/readyz`)).status).toBe(200);
    } finally {
      remove();
    }
  });

  it('/metrics serves live runs by state and the delivery outbox from the database, and queue depth', async () => {
    const created = await s.api('POST', '/agent/runs', { prompt: 'count me' });
    expect(created.status).toBeLessThan(300);
    await s.server.ctx.db.query(
      `INSERT INTO webhook_deliveries (id, webhook_uid, team_id, factory_id, webhook_name, label, size, received_at, outbox_pending)
       VALUES ('dlv_m1', 'wh_x', 'team_x', 'fac_x', 'x', 'accepted', 0, now(), true), ('dlv_m2', 'wh_x', 'team_x', 'fac_x', 'x', 'rejected_auth', 0, now(), false)`,
    );
    const remove = s.server.services.metrics.addQueue('factories', () => 3);
    try {
      const res = await request(`${s.url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(res.text).toMatch(/agentyard_runs\{state="QUEUED"\} 1\n/);
      expect(res.text).toMatch(/agentyard_runs\{state="CLAIMED"\} 0\n/);
      expect(res.text).toMatch(/agentyard_runs\{state="INPROGRESS"\} 0\n/);
      expect(res.text).not.toMatch(/agentyard_runs\{state="(SUCCEEDED|FAILED|ERROR|CANCELLED|BLOCKED)"\}/);
      expect(res.text).toMatch(/agentyard_webhook_outbox_pending 1\n/);
      expect(res.text).toMatch(/agentyard_workqueue_depth\{controller="factories"\} 3/);
      expect(res.text).toContain('# TYPE agentyard_factory_applies_total counter');
      expect(res.text).toContain('# TYPE agentyard_reconcile_duration_seconds histogram');
    } finally {
      remove();
    }
  });
});
