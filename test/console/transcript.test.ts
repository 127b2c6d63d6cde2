import { describe, expect, it } from 'vitest';
import { markdown } from '../../src/console/markdown.ts';
import {
  collapsible,
  renderArtifact,
  renderTranscript,
  toolOutputText,
  toolSummary,
} from '../../src/console/transcript.ts';

describe('markdown for agent text', () => {
  it('renders headings, lists, code and links, and escapes everything else', () => {
    const out = markdown(
      '# Plan\n\n1. Fix *it*\n2. Test `a<b`\n\n```\n<script>x</script>\n```\n[ok](https://x.test/?a=1&b=2)',
    ).text;
    expect(out).toContain('<h3>Plan</h3>');
    expect(out).toContain('<ol><li>Fix <em>it</em></li><li>Test <code>a&lt;b</code></li></ol>');
    expect(out).toContain('<pre><code>&lt;script&gt;x&lt;/script&gt;</code></pre>');
    expect(out).toContain('<a href="https://x.test/?a=1&amp;b=2" rel="noopener noreferrer">ok</a>');
  });

  it('never makes markup or a script link from hostile text', () => {
    const out = markdown('<img src=x onerror=alert(1)> [x](javascript:alert(1)) **<b>**').text;
    expect(out).not.toMatch(/<img|<b>|href="javascript/);
    expect(out).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });
});

describe('tool calls as the harnesses report them', () => {
  it('summarises the input and reads each output shape', () => {
    expect(toolSummary({ command: 'ls -a' })).toBe('ls -a');
    expect(toolSummary({ file_path: 'src/a.ts', content: '…' })).toBe('src/a.ts');
    expect(toolSummary({ changes: [{ path: 'a' }, { path: 'b' }] })).toBe('a, b');
    // codex, the command harness, Claude Code and an MCP tool
    expect(toolOutputText({ output: 'hi\n', exit_code: 0 })).toEqual({ text: 'hi\n', exitCode: 0 });
    expect(toolOutputText({ stdout: 'out' }).text).toBe('out');
    expect(toolOutputText({ content: [{ type: 'text', text: 'read 3 lines' }] }).text).toBe('read 3 lines');
    expect(toolOutputText({ result: { content: [{ type: 'text', text: 'issue #4' }] }, error: null }).text).toBe(
      'issue #4',
    );
  });

  it('shows a pull request link only for http(s) URLs', () => {
    expect(renderArtifact({ artifact_type: 'PULL_REQUEST', data: { url: 'javascript:alert(1)' } }).text).not.toContain(
      'href',
    );
  });

  it('collapses a long body: a link to the event when it has one, the text in the block when not', () => {
    expect(collapsible('Output', 'a\nb\nc\nd').text).toBe('<pre class="out" aria-label="Output">a\nb\nc\nd</pre>');
    const long = 'x\n'.repeat(5);
    expect(collapsible('Output', long, '/console/runs/r/events/7').text).toBe(
      '<details class="out"><summary>Output (6 lines)</summary><a class="more" href="/console/runs/r/events/7">Show the output</a></details>',
    );
    expect(collapsible('Data', 'y'.repeat(401)).text).toMatch(
      /^<details class="out"><summary>Data \(1 line\)<\/summary><pre>y{401}<\/pre>/,
    );
  });

  it('renders each tool result inside its call, with the time of day and the exact time', () => {
    const at = '2026-01-02T03:04:05.678Z';
    const ev = (sequence: number, type: string, data: Record<string, unknown>) => ({
      sequence,
      run_id: 'run_<x>',
      execution_id: null,
      type,
      occurred_at: at,
      data,
    });
    const out = renderTranscript([
      ev(1, 'tool_call', { id: 't1', name: 'Bash', input: { command: 'seq 1 9' } }),
      ev(2, 'tool_result', { id: 't1', status: 'completed', output: { stdout: '1\n2\n3\n4\n5\n6\n7\n8\n9' } }),
      ev(3, 'status', { message: 'done' }),
    ]).text;
    expect(out.match(/<li /g)).toHaveLength(2);
    expect(out).toContain(`<time datetime="${at}">03:04:05</time>`);
    expect(out).toContain(
      '<summary>Output (9 lines)</summary><a class="more" href="/console/runs/run_%3Cx%3E/events/2">',
    );
  });
});
