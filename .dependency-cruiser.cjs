/**
 * The layer rules (dependency-cruiser). Run by test/architecture/layers.test.ts in `npm test`,
 * or by hand: `npx depcruise src lib bin`.
 *
 * Paths are relative to the directory cruised from (the repository root; the rule tests cruise a
 * fixture tree with the same layout). Type-only imports count: a layer that may not depend on
 * another may not borrow its types either.
 *
 * @type {import('dependency-cruiser').IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: 'domain-is-pure',
      comment:
        'src/domain imports only src/domain files and zod: no Node built-in (ids and time come through ports), no SDK, no logger, nothing outside it.',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { pathNot: ['^src/domain/', '(^|/)node_modules/zod/'] },
    },
    {
      name: 'domain-rules-below-use-cases',
      comment: 'The rule files (src/domain/*.ts) are what use cases are built from; they never import a use case.',
      severity: 'error',
      from: { path: '^src/domain/[^/]+$' },
      to: { path: '^src/domain/use-cases/' },
    },
    {
      name: 'domain-no-cycles',
      comment: 'No circular dependencies inside src/domain.',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { path: '^src/domain/', circular: true },
    },
    {
      name: 'adapters-below-runtime-and-handlers',
      comment: 'src/adapters implement ports; they import nothing from src/runtime, src/handlers or src/local.',
      severity: 'error',
      from: { path: '^src/adapters/' },
      to: { path: '^src/(runtime|handlers|local)/' },
    },
    {
      name: 'handlers-through-runtime',
      comment: 'src/handlers reach an adapter only through src/runtime, which composes them: a handler names ports and what the runtime hands it.',
      severity: 'error',
      from: { path: '^src/handlers/' },
      to: { path: '^src/adapters/' },
    },
    {
      name: 'handlers-not-local',
      comment: 'src/handlers run in Lambda; the local runtime (src/local) wraps them, never the other way round.',
      severity: 'error',
      from: { path: '^src/handlers/' },
      to: { path: '^src/local/' },
    },
    {
      name: 'src-not-infrastructure',
      comment: 'Nothing under src imports the CDK app (lib/) or its entry point (bin/).',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(lib|bin)/' },
    },
    {
      name: 'zod-through-one-module',
      comment:
        "Schemas are written with zod's mini build, imported from src/domain/zod.ts (which sets the issue messages); importing zod directly could bring the classic build (~100 KiB, slower to load and to build schemas with) back into every function's bundle.",
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/domain/zod\\.ts$' },
      to: { path: '(^|/)node_modules/zod/' },
    },
    {
      name: 'resolvable',
      comment: 'Every import resolves (an unresolved one could hide any of the rules above).',
      severity: 'error',
      from: { path: '^(src|lib|bin)/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    enhancedResolveOptions: {
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      exportsFields: ['exports'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
  },
};
