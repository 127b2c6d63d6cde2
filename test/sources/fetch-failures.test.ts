import { describe, expect, it } from 'vitest';
import { terminalFetchFailure } from '../../src/sources/git.ts';

const unable = (url: string, status: number) =>
  `unable to access '${url}': The requested URL returned error: ${status}`;

describe('git fetch failures', () => {
  it('reads HTTP statuses as git words them, never digits of the URL', () => {
    // ports and paths holding 401, 403 or 404 are not statuses: a 503 from them is worth a retry
    for (const url of [
      'http://127.0.0.1:40123/acme/f.git/',
      'http://127.0.0.1:34031/x.git/',
      'http://h:40404/404.git/',
    ])
      expect(terminalFetchFailure(unable(url, 503)), url).toBeUndefined();
    expect(terminalFetchFailure(unable('http://127.0.0.1:40123/acme/f.git/', 403))?.reason).toBe(
      'AuthenticationFailed',
    );
    expect(terminalFetchFailure(unable('http://127.0.0.1:8080/acme/f.git/', 401))?.reason).toBe('AuthenticationFailed');
    expect(terminalFetchFailure(unable('http://127.0.0.1:8080/acme/f.git/', 404))?.reason).toBe('RepositoryNotFound');
  });

  it('names the other failures git reports as they are', () => {
    expect(terminalFetchFailure("could not read Username for 'https://h': terminal prompts disabled")?.reason).toBe(
      'AuthenticationFailed',
    );
    expect(terminalFetchFailure("couldn't find remote ref refs/heads/prod")?.reason).toBe('BranchNotFound');
    expect(terminalFetchFailure("'/srv/x' does not appear to be a git repository")?.reason).toBe('RepositoryNotFound');
    expect(terminalFetchFailure('Failed to connect to 127.0.0.1 port 40123: Connection refused')).toBeUndefined();
  });
});
