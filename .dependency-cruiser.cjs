/**
 * Which folder of src/ may import which (docs/architecture.md). `test/architecture.test.ts` runs it, so
 * `npm test` fails on a new arrow that breaks a rule. Type-only imports count like any other.
 */
const DOMAINS =
  '^src/(automations|console|definitions|engine|execution|factories|health|identity|ingress|integrations|metrics|operator|orchestration|runs|schedules|scoring|secrets|sources|store|workers)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'kernel-imports-no-domain',
      comment: 'src/kernel/ is at the bottom: errors, bus topics, ids, clock, the database interface.',
      severity: 'error',
      from: { path: '^src/kernel/' },
      to: { path: '^src/', pathNot: '^src/kernel/' },
    },
    {
      name: 'kernel-knows-no-web-framework',
      severity: 'error',
      from: { path: '^src/kernel/' },
      to: { path: 'node_modules/(fastify|@fastify|find-my-way)/' },
    },
    {
      name: 'domains-never-import-http',
      comment: 'Domains import the kernel; only the entry points (cli/, server.ts) and the composition root import src/http/.',
      severity: 'error',
      from: { path: DOMAINS },
      to: { path: '^src/http/' },
    },
    {
      name: 'definitions-pure',
      comment: 'definitions/ runs offline (agentyard validate) and in worker threads: no store, no http, no fastify.',
      severity: 'error',
      from: { path: '^src/definitions/' },
      to: {
        path: ['^src/', 'node_modules/(fastify|@fastify|pg|@electric-sql)/'],
        pathNot: ['^src/definitions/', '^src/kernel/', '^src/ingress/signatures/'],
      },
    },
    {
      name: 'signature-schemes-pure',
      comment: 'ingress/signatures/ is a library of verifiers (definitions/ checks scheme names against it).',
      severity: 'error',
      from: { path: '^src/ingress/signatures/' },
      to: { path: '^src/', pathNot: ['^src/ingress/signatures/', '^src/kernel/'] },
    },
    {
      name: 'store-knows-no-domain',
      severity: 'error',
      from: { path: '^src/store/' },
      to: { path: '^src/', pathNot: ['^src/store/', '^src/kernel/'] },
    },
    {
      name: 'ingress-not-runs-or-factories',
      comment: 'The ingress records deliveries; what follows from them is the automations\' and the runs\' business.',
      severity: 'error',
      from: { path: '^src/ingress/' },
      to: { path: '^src/(runs|factories)/' },
    },
    {
      name: 'fastify-only-in-http-and-route-plugins',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/http/', '/routes\\.ts$', '-routes\\.ts$', '^src/plugin\\.ts$'] },
      to: { path: 'node_modules/(fastify|@fastify/type-provider-typebox)/' },
    },
    {
      name: 'plugin-types-only-in-route-plugins',
      comment:
        'src/plugin.ts carries Fastify types: the route plugins, the composition root and src/http/ only. ' +
        'Known exceptions: runs/attachments.ts and identity/agent-identities.ts hold routes under older names.',
      severity: 'error',
      from: {
        path: '^src/',
        pathNot: [
          '^src/http/',
          '/routes\\.ts$',
          '-routes\\.ts$',
          '^src/(server|composition)\\.ts$',
          '^src/runs/attachments\\.ts$',
          '^src/identity/agent-identities\\.ts$',
        ],
      },
      to: { path: '^src/plugin\\.ts$' },
    },
    {
      name: 'context-and-plugin-know-no-domain',
      comment:
        'src/context.ts and src/plugin.ts are what every domain receives: the caller and the cipher are kernel ' +
        'interfaces (kernel/caller.ts) that identity/ and secrets/ implement.',
      severity: 'error',
      from: { path: '^src/(context|plugin)\\.ts$' },
      to: { path: DOMAINS },
    },
    {
      name: 'engine-below-its-callers',
      comment:
        'src/engine/ owns the life of a run (runs, executions, the queue and its one claim, start, lease, finish, ' +
        'the reaper); the Run API, the agent runtime, workers, the operator and schedules call it, never the other ' +
        'way round. Of store/ it uses the function-set type and the retry on a deadlock.',
      severity: 'error',
      from: { path: '^src/engine/' },
      to: { path: '^src/', pathNot: ['^src/engine/', '^src/kernel/', '^src/store/function-sets\\.ts$', '^src/store/errors\\.ts$'] },
    },
    {
      name: 'processes-start-from-the-spawner',
      comment:
        'child_process forks the large server process, pausing its event loop for tens of ms (docs/decisions.md, ' +
        '"Agents and git are started by a spawner process"): commands run through kernel/run-command.ts or ' +
        'kernel/spawner.ts. The built-in agent runs in its own small process.',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/kernel/spawner-(link|process)\\.ts$', '^src/execution/builtin-agent/'] },
      to: { path: ['^(node:)?child_process$', 'node_modules/simple-git/'] },
    },
    {
      name: 'no-cycles-between-folders',
      severity: 'error',
      scope: 'folder',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
    exclude: { path: '\\.d\\.ts$' },
  },
};
