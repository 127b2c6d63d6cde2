/** Where the API's routes live; links in answers are built from it. */
export const API_PREFIX = '/api/v1';

/** The web console's session cookie (src/console/session.ts); a run's session link opens the console for it. */
export const CONSOLE_SESSION_COOKIE = 'agentyard_session';

/** Where the console shows a run. */
export const consoleRunPath = (runId: string): string => `/console/runs/${encodeURIComponent(runId)}`;
