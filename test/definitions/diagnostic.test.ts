import { describe, expect, it } from 'vitest';
import {
  formatDiagnostics,
  formatGithub,
  formatJson,
  formatText,
  normalizeDiagnostics,
} from '../../src/definitions/diagnostic.ts';
import type { Diagnostic } from '../../src/definitions/diagnostic.ts';

const error: Diagnostic = {
  file: 'factory.yaml',
  line: 7,
  column: 3,
  path: '/agentDefaults/runer',
  code: 'FF_UNKNOWN_FIELD',
  message: 'unknown key `runer`; did you mean `runner`?',
  severity: 'error',
};
const warning: Diagnostic = {
  file: 'a, b:c.md',
  line: 1,
  column: 1,
  path: '',
  code: 'FF_NOT_SUPPORTED_HERE',
  message: '100% line1\nline2',
  severity: 'warning',
};

describe('formatters', () => {
  it('text: file:line:column: severity code: message', () => {
    expect(formatText([error, warning])).toBe(
      'factory.yaml:7:3: error FF_UNKNOWN_FIELD: unknown key `runer`; did you mean `runner`?\n' +
        'a, b:c.md:1:1: warning FF_NOT_SUPPORTED_HERE: 100% line1\nline2\n',
    );
    expect(formatText([])).toBe('');
  });

  it('every format reports identical diagnostics once', () => {
    const twice = [error, { ...error }, warning, { ...warning }];
    expect(formatText(twice)).toBe(formatText([error, warning]));
    expect(JSON.parse(formatJson(twice))).toHaveLength(2);
    expect(formatGithub(twice).trim().split('\n')).toHaveLength(2);
  });

  it('json: an array with every field', () => {
    expect(JSON.parse(formatJson([error]))).toEqual([{ ...error }]);
  });

  it('github: workflow commands with escaped properties and data', () => {
    expect(formatGithub([error, warning])).toBe(
      '::error file=factory.yaml,line=7,col=3,title=FF_UNKNOWN_FIELD::FF_UNKNOWN_FIELD: unknown key `runer`; did you mean `runner`?\n' +
        '::warning file=a%2C b%3Ac.md,line=1,col=1,title=FF_NOT_SUPPORTED_HERE::FF_NOT_SUPPORTED_HERE: 100%25 line1%0Aline2\n',
    );
    expect(formatDiagnostics([error], 'github')).toBe(formatGithub([error]));
  });

  it('normalize sorts by file and position and drops exact duplicates', () => {
    const later = { ...error, line: 9 };
    expect(normalizeDiagnostics([later, error, error, warning])).toEqual([warning, error, later]);
  });
});
