/**
 * A Kubernetes Job's agent reaches the factory interface through AGENTYARD_PUBLIC_URL with its run token, against
 * a real API server (no kubelet: the Job's status is written as the Job controller would). The Job spec names
 * `AGENTYARD_MCP_URL` (the public URL's MCP path) and takes `AGENTYARD_RUN_TOKEN` from the run's Secret, never
 * from its spec; the token from that Secret works against the server while the Job's pod runs (the real MCP
 * client: `list_agents`, `dispatch_agent` with the run as parent; a request addressed to the public host name),
 * and is refused once the Job has completed.
 */
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUIRE_KUBERNETES, kubernetesAvailability } from './k8s.ts';
import { clients, jobTime, startJobFactory } from './support.ts';
import type { JobFactory } from './support.ts';

const availability = kubernetesAvailability();
const PUBLIC_HOST = 'agentyard.agentyard.svc.cluster.local';
const PUBLIC_URL = `http://${PUBLIC_HOST}:8080`;
const STAND_IN = '/opt/agent/stand-in';

if (availability.missing && REQUIRE_KUBERNETES) {
  describe('a Job reaches the factory interface', () => {
    it('has the Kubernetes test environment (CI)', () => {
      throw new Error(`CI=true but ${availability.missing}`);
    });
  });
}

const FILES = {
  'factory.yaml': `schemaVersion: v1alpha1
name: Job team
repositories:
  - owner: acme
    name: api
agentDefaults:
  model: auto
  runner: default
`,
  'agents/foreman/agent.md': `---
agentType: FOREMAN
description: Delegates.
---

You delegate.
`,
  'agents/implement/agent.md': `---
description: Implements.
---

Implement it.
`,
  'runners/default.yaml': `platform:
  os: linux
  linux:
    dockerImage: node:24-bookworm
`,
};

describe.skipIf(availability.missing !== undefined)('a Job reaches the factory interface with its run token', () => {
  const namespace = 'mcp-jobs';
  let kube: JobFactory;
  let factoryId: string;

  beforeAll(async () => {
    kube = await startJobFactory(availability, {
      namespace,
      name: 'team',
      files: FILES,
      jobs: {
        defaultImage: 'busybox:1.36',
        harness: {
          defaultHarness: 'command',
          bins: { claude: 'claude', codex: 'codex', gemini: 'gemini', command: STAND_IN, agentyard: 'node' },
          commandArgs: [],
        },
      },
      config: { publicUrl: PUBLIC_URL },
    });
    factoryId = kube.factory.status!.factoryId!;
  }, 180_000);

  afterAll(async () => {
    await kube?.stop();
  });

  const runOf = async (runId: string) =>
    (
      await kube.op.database.db.query<{ state: string; parent_run_id: string | null; config: { name?: string } }>(
        'SELECT state, parent_run_id, config FROM runs WHERE id = $1',
        [runId],
      )
    ).rows[0]!;
  /** A JSON-RPC request to the factory interface, addressed to `host` (as a pod reaches the Service). */
  const rpc = (token: string, host: string, message: unknown) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const target = new URL(`${kube.op.url}/api/v1/mcp/factory`);
      const req = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          headers: {
            host,
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
        },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(message));
    });

  it("carries the MCP URL in the Job's spec and the token in its Secret; the token works while the pod runs", async () => {
    const created = await kube.api('POST', `/factories/${factoryId}/runs`, { prompt: 'Lead the change.' });
    expect(created.status, JSON.stringify(created.body)).toBeLessThan(300);
    const runId = (created.body.run_id ?? created.body.id) as string;
    const job = await kube.jobOf(runId);

    // the spec: the URL (through AGENTYARD_PUBLIC_URL), the token only by reference to the run's Secret
    const agent = job.spec!.template.spec!.containers[0]!;
    expect(agent.command).toContain(STAND_IN);
    const env = Object.fromEntries(agent.env!.map((e) => [e.name, e]));
    expect(env.AGENTYARD_MCP_URL!.value).toBe(`${PUBLIC_URL}/api/v1/mcp/factory`);
    expect(env.AGENTYARD_RUN_TOKEN!.value).toBeUndefined();
    expect(env.AGENTYARD_RUN_TOKEN!.valueFrom!.secretKeyRef).toEqual({
      name: job.metadata!.name,
      key: 'env.AGENTYARD_RUN_TOKEN',
    });
    const secret = await clients(kube.k8s).core.readNamespacedSecret({ name: job.metadata!.name!, namespace });
    const token = Buffer.from(secret.data!['env.AGENTYARD_RUN_TOKEN']!, 'base64').toString('utf8');
    expect(token).toMatch(/^ayrt_/);
    expect(JSON.stringify(job)).not.toContain(token);

    // the pod starts (as the Job controller reports it): the token is live
    await kube.setJobStatus(job, { startTime: jobTime(), active: 1, ready: 1 });
    await kube.told(async () => (await runOf(runId)).state === 'INPROGRESS', 10_000, 'the run to start');

    // the agent's MCP client (the real SDK) with the token from the Secret
    const client = new Client({ name: 'job-agent', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${kube.op.url}/api/v1/mcp/factory`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    try {
      const agents = (await client.callTool({ name: 'list_agents', arguments: {} })) as {
        structuredContent?: { agents: { name: string }[] };
      };
      expect(agents.structuredContent?.agents.map((a) => a.name).sort()).toEqual(['foreman', 'implement']);
      const dispatched = (await client.callTool({
        name: 'dispatch_agent',
        arguments: { agent: 'implement', prompt: 'Implement the change.' },
      })) as { isError?: boolean; structuredContent?: { run_id: string; parent_run_id: string } };
      expect(dispatched.isError ?? false).toBe(false);
      expect(dispatched.structuredContent?.parent_run_id).toBe(runId);
      const child = await runOf(dispatched.structuredContent!.run_id);
      expect(child).toMatchObject({ parent_run_id: runId, config: { name: 'implement' } });
      // the child is a run like any other: it gets a Job of its own, with a token of its own
      const childJob = await kube.jobOf(dispatched.structuredContent!.run_id);
      const childSecret = await clients(kube.k8s).core.readNamespacedSecret({
        name: childJob.metadata!.name!,
        namespace,
      });
      expect(Buffer.from(childSecret.data!['env.AGENTYARD_RUN_TOKEN']!, 'base64').toString('utf8')).not.toBe(token);
    } finally {
      await client.close();
    }

    // a request addressed as the pod addresses it: the public URL's host name is this server's
    const ping = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_agents', arguments: {} } };
    const viaService = await rpc(token, `${PUBLIC_HOST}:8080`, ping);
    expect(viaService.status).toBe(200);
    expect(viaService.body.result.structuredContent.agents).toHaveLength(2);
    expect((await rpc(token, 'evil.example.com', ping)).status).toBe(403);

    // the Job completes: the run ends, and its token with it
    await kube.setJobStatus(job, {
      active: 0,
      ready: 0,
      succeeded: 1,
      completionTime: jobTime(),
      conditions: [
        { type: 'SuccessCriteriaMet', status: 'True', lastTransitionTime: jobTime(), lastProbeTime: jobTime() },
        { type: 'Complete', status: 'True', lastTransitionTime: jobTime(), lastProbeTime: jobTime() },
      ],
    });
    await kube.told(async () => (await runOf(runId)).state === 'SUCCEEDED', 10_000, 'the run to succeed');
    const after = await rpc(token, `${PUBLIC_HOST}:8080`, ping);
    expect(after.status).toBe(401);
    expect(JSON.stringify(after.body)).toContain('no longer running');
  });
});
