/** Where the API's routes live; links in answers are built from it. */
export const API_PREFIX = '/api/v1';

/** The web console's session cookie (src/console/session.ts); a run's session link opens the console for it. */
export const CONSOLE_SESSION_COOKIE = 'agentyard_session';

/** Where the console shows a run. */
export const consoleRunPath = (runId: string): string => `/console/runs/${encodeURIComponent(runId)}`;

/** The factory interface: the MCP server every run is offered (docs/orchestration.md). */
export const FACTORY_MCP_PATH = '/mcp/factory';

/** The factory interface's URL on a server reached at `publicUrl` (AGENTYARD_PUBLIC_URL). */
export const factoryMcpUrl = (publicUrl: string): string => `${publicUrl}${API_PREFIX}${FACTORY_MCP_PATH}`;
