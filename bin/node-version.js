// Runs before any TypeScript source is loaded, so it must stay plain JavaScript that Node 18 and 20 can parse.
// The sources are run by Node's type stripping; older Nodes die on them with ERR_UNKNOWN_FILE_EXTENSION.

/** The oldest Node.js release Agentyard runs on (package.json `engines.node`; a test keeps the two equal). */
export const MINIMUM_NODE = '22.22.0';

/**
 * The one line to print when `version` (as in `process.versions.node`) is older than MINIMUM_NODE, or
 * undefined when it will do.
 * @param {string} version
 * @returns {string | undefined}
 */
export function nodeVersionProblem(version) {
  const have = version.split('.').map((part) => Number.parseInt(part, 10) || 0);
  const need = MINIMUM_NODE.split('.').map(Number);
  for (let i = 0; i < need.length; i++) {
    const a = have[i] ?? 0;
    const b = need[i] ?? 0;
    if (a > b) return undefined;
    if (a < b)
      return (
        `agentyard needs Node.js ${MINIMUM_NODE.replace(/\.0$/, '')} or newer; this is ${version}. ` +
        'Install Node 24 LTS from https://nodejs.org/en/download or with a version manager ' +
        '(fnm install 24, nvm install 24), then run the command again.'
      );
  }
  return undefined;
}
