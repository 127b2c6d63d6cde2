/**
 * `concurrency` on an automation and `maxActiveRuns` in factory.yaml (docs/governance.md, "Concurrency keys"):
 * stored with their defaults, refused at the offending line and column; the key template rendered over a
 * webhook body and over a GitHub pull_request event from `@octokit/webhooks-examples`.
 */
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { describe, expect, it } from 'vitest';
import { providerKey, webhookKey } from '../../src/automations/concurrency.ts';
import { MAX_RENDERED_KEY, parseKeyTemplate, renderKey } from '../../src/definitions/concurrency-key.ts';
import { validateFactory } from '../../src/definitions/index.ts';
import { githubEvents } from '../../src/definitions/provider-events.ts';
import { tree, UID, webhookAutomation } from './support.ts';

const FACTORY =
  'name: Test\nrepositories:\n  - {owner: acme, name: api}\nagentDefaults:\n  model: auto\n  runner: linux\n';

function githubExample(event: string, action: string): Record<string, any> {
  const entry = (examples as { name: string; examples: Record<string, any>[] }[]).find((e) => e.name === event)!;
  return structuredClone(entry.examples.find((x) => x.action === action)!);
}

const errorsOf = async (files: Record<string, string>) =>
  (await validateFactory(tree(files))).diagnostics
    .filter((d) => d.severity === 'error')
    .map((d) => ({ file: d.file, line: d.line, column: d.column, path: d.path, code: d.code, message: d.message }));

describe('concurrency in factory files', () => {
  it("stores an automation's concurrency with its defaults, and maxActiveRuns", async () => {
    const result = await validateFactory(
      tree({
        'factory.yaml': `${FACTORY}maxActiveRuns: 5\n`,
        'automations/review/automation.md': webhookAutomation(
          UID,
          'concurrency:\n  key: "{{repository}}#{{ pull_request.number }}"\n  onNew: cancelRunning\n',
        ),
        'automations/alerts/automation.md': webhookAutomation(
          UID,
          'concurrency: {key: "{{payload.alert.service}}", limit: 3}\n',
        ),
        'automations/plain/automation.md': webhookAutomation(UID),
      }),
    );
    expect(result.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const automation = (name: string) => result.definition!.automations.find((a) => a.name === name)!;
    expect(automation('review').concurrency).toEqual({
      key: '{{repository}}#{{ pull_request.number }}',
      limit: 1,
      onNew: 'cancelRunning',
    });
    expect(automation('alerts').concurrency).toEqual({ key: '{{payload.alert.service}}', limit: 3, onNew: 'queue' });
    expect(automation('plain').concurrency).toBeUndefined();
    expect(result.definition!.factory.maxActiveRuns).toBe(5);
  });

  it('refuses bad values at their line and column', async () => {
    const errors = await errorsOf({
      'factory.yaml': `${FACTORY}maxActiveRuns: 0\n`,
      'automations/a/automation.md': webhookAutomation(UID, 'concurrency:\n  key: "pr"\n  onNew: cancelOlder\n'),
      'automations/b/automation.md': webhookAutomation(UID, 'concurrency:\n  key: "pr-{{pull_request.number"\n'),
      'automations/c/automation.md': webhookAutomation(UID, 'concurrency:\n  key: "{{ a b }}"\n  limit: 0\n'),
      'automations/d/automation.md': webhookAutomation(UID, 'concurrency:\n  limit: 2\n'),
    });
    const at = (file: string, path: string) => errors.find((e) => e.file === file && e.path === path);
    expect(at('factory.yaml', '/maxActiveRuns')).toMatchObject({ line: 7, column: 16 });
    expect(at('automations/a/automation.md', '/concurrency/onNew')).toMatchObject({ line: 4, column: 10 });
    expect(at('automations/a/automation.md', '/concurrency/onNew')!.message).toContain('cancelRunning');
    expect(at('automations/b/automation.md', '/concurrency/key')).toMatchObject({
      line: 3,
      column: 8,
      code: 'FF_INVALID_VALUE',
      message: expect.stringContaining('`{{` at character 4 is never closed by `}}`'),
    });
    expect(at('automations/c/automation.md', '/concurrency/limit')).toMatchObject({ line: 4, column: 10 });
    // a missing key is reported at the mapping that misses it
    expect(errors.find((e) => e.file === 'automations/d/automation.md')).toMatchObject({
      line: 3,
      message: expect.stringContaining('key'),
    });
  });

  it('refuses a placeholder that is not a field path, and too long a template', async () => {
    expect(parseKeyTemplate('{{ a b }}')).toEqual({ error: expect.stringContaining('is not a field path') });
    expect(parseKeyTemplate('{{}}')).toEqual({ error: expect.stringContaining('is not a field path') });
    expect(parseKeyTemplate('x{{a.0.b}}y')).toEqual({
      parts: [{ text: 'x' }, { path: ['a', '0', 'b'] }, { text: 'y' }],
    });
    const errors = await errorsOf({
      'automations/a/automation.md': webhookAutomation(UID, `concurrency: {key: "${'x'.repeat(501)}"}\n`),
    });
    expect(errors.map((e) => e.path)).toContain('/concurrency/key');
  });
});

describe('rendering a concurrency key', () => {
  it('renders {{payload.<path>}} and bare paths from a webhook body; missing fields render as nothing', () => {
    const body = { alert: { service: 'billing', id: 42, paged: true, tags: ['p1', 'db'], owner: null } };
    const policy = (key: string) => ({ key, limit: 1, onNew: 'queue' as const });
    expect(webhookKey(policy('{{payload.alert.service}}/{{alert.id}}'), body).key).toBe('billing/42');
    expect(webhookKey(policy('{{payload.alert.tags.1}}:{{payload.alert.paged}}'), body).key).toBe('db:true');
    // missing, null, an object, a list: nothing
    expect(webhookKey(policy('svc-{{payload.alert.region}}-{{alert.owner}}-{{alert}}-{{alert.tags}}'), body).key).toBe(
      'svc----',
    );
    expect(webhookKey(policy('{{payload.x}}'), 'not an object').key).toBe('');
  });

  it('bounds the key: control characters replaced, a long key cut to a prefix and a digest', () => {
    expect(renderKey('{{a}}', () => 'line\nbreak\u0000')).toBe('line?break?');
    const long = renderKey('{{a}}', () => 'x'.repeat(500));
    const other = renderKey('{{a}}', () => `${'x'.repeat(499)}y`);
    expect(Array.from(long)).toHaveLength(MAX_RENDERED_KEY);
    expect(long).toMatch(/^x{183}~[0-9a-f]{16}$/);
    expect(other).not.toBe(long);
  });

  it('renders {{repository}}#{{pull_request.number}} from a GitHub pull_request example', () => {
    const payload = githubExample('pull_request', 'opened');
    const derived = githubEvents('pull_request', payload);
    const c = providerKey(
      { key: '{{repository}}#{{pull_request.number}}', limit: 1, onNew: 'cancelRunning' },
      derived,
      derived.events[0]!.event,
      payload,
    );
    expect(c.key).toBe(`${(payload.repository.full_name as string).toLowerCase()}#${payload.pull_request.number}`);
    expect(
      providerKey(
        { key: '{{event}} by {{sender}} on {{subject}}', limit: 1, onNew: 'queue' },
        derived,
        'pull_request_opened',
        payload,
      ).key,
    ).toBe(`pull_request_opened by ${payload.sender.login} on ${payload.repository.full_name}`);
    // an issue comment has no pull_request: the number renders as nothing
    const comment = githubExample('issue_comment', 'created');
    expect(providerKey(c.policy, githubEvents('issue_comment', comment), 'issue_commented', comment).key).toBe(
      `${(comment.repository.full_name as string).toLowerCase()}#`,
    );
  });
});
