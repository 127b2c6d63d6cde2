import { describe, expect, it } from 'vitest';
import { markdown } from '../../src/console/markdown.ts';
import { renderArtifact, toolOutputText, toolSummary } from '../../src/console/transcript.ts';

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
});
