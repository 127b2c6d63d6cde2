/**
 * `harness: agentyard` (the built-in agent) in factory files: its endpoint `baseUrl` is inherited like the other
 * harness keys, is refused on another harness type, must be an http(s) URL without credentials, and reaches
 * the run configuration as `harness.base_url` with the auth secret as `agentyard_auth_secret_name`.
 */
import { describe, expect, it } from 'vitest';
import { validateFactory } from '../../src/definitions/index.ts';
import { runConfigFor } from '../../src/factories/apply/run-config.ts';
import { tree } from './support.ts';

const FACTORY = `name: Test
repositories:
  - {owner: acme, name: api}
agentDefaults:
  harness: {type: agentyard, model: qwen2.5-coder, baseUrl: "http://vllm.internal:8000/v1", auth: {source: managedSecret, secretName: vllm-key}}
  runner: linux
`;

describe('harness: agentyard', () => {
  it('resolves baseUrl through the levels and puts it in the run configuration', async () => {
    const result = await validateFactory(
      tree({
        'factory.yaml': FACTORY,
        'agents/coder/agent.md': '---\nharness: {model: llama3.3}\n---\nCode.\n',
        'agents/local/agent.md': '---\nharness: {baseUrl: null}\n---\nLocal.\n',
      }),
    );
    expect(result.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const agents = Object.fromEntries(result.definition!.agents.map((a) => [a.name, a.execution.harness]));
    expect(agents.coder).toEqual({
      type: 'agentyard',
      model: 'llama3.3',
      reasoningLevel: null,
      auth: { source: 'managedSecret', secretName: 'vllm-key' },
      baseUrl: 'http://vllm.internal:8000/v1',
    });
    expect(agents.local!.baseUrl).toBeUndefined();
    const coder = result.definition!.agents.find((a) => a.name === 'coder')!;
    expect(runConfigFor(coder.execution, 'coder')).toMatchObject({
      harness: { type: 'agentyard', model_id: 'llama3.3', base_url: 'http://vllm.internal:8000/v1' },
      harness_auth_secrets: { agentyard_auth_secret_name: 'vllm-key' },
    });
  });

  it('refuses baseUrl on another harness, and a URL that is not http(s) or carries credentials', async () => {
    const result = await validateFactory(
      tree({
        'agents/a/agent.md': '---\nharness: {type: codex, model: gpt-5, baseUrl: "http://x/v1"}\n---\nA.\n',
        'agents/b/agent.md': '---\nharness: {type: agentyard, model: m, baseUrl: "file:///etc/passwd"}\n---\nB.\n',
        'agents/c/agent.md': '---\nharness: {type: agentyard, model: m, baseUrl: "http://u:p@host/v1"}\n---\nC.\n',
      }),
    );
    const errors = result.diagnostics.filter((d) => d.severity === 'error');
    expect(errors.map((d) => [d.file, d.path, d.code])).toEqual(
      expect.arrayContaining([
        ['agents/a/agent.md', '/harness/baseUrl', 'FF_INVALID_VALUE'],
        ['agents/b/agent.md', '/harness/baseUrl', 'FF_INVALID_VALUE'],
        ['agents/c/agent.md', '/harness/baseUrl', expect.any(String)],
      ]),
    );
    expect(errors.find((d) => d.file === 'agents/a/agent.md')!.message).toContain('only `harness.type: agentyard`');
  });
});
