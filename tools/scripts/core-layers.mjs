// The layer order of @sbx/core's concept folders, bottom first. A folder may import only folders of
// lower layers; two folders of one layer never import each other. Cross-cutting needs (logging,
// clocks, module loading) live at the bottom as small interfaces, so a higher layer hands them down
// instead of a lower one reaching up. tools/scripts/folder-graph.mjs enforces this table and writes
// it into docs/architecture.md.
export const CORE_LAYERS = [
  {
    folders: ['errors', 'logging'],
    uses: 'nothing: the typed errors and their inspection helpers; the Logger interface',
  },
  {
    folders: ['async', 'modules'],
    uses: 'errors, logging: clocks, deadlines, single flight; lazy and optional module loading',
  },
  {
    folders: ['identity', 'command'],
    uses: 'errors: sandbox ids, scopes and the id rule; shell quoting and command output bounds',
  },
  {
    folders: ['paths'],
    uses: 'identity, modules, errors: virtual paths, mappings, validation, masking, line ranges',
  },
  {
    folders: ['contract'],
    uses: 'paths, identity, command, async, logging, errors: Sandbox, SandboxProvider, exec and process types, spec, provider events',
  },
  {
    folders: ['config'],
    uses: 'contract and below: the configuration schema, loader and env policy',
  },
  {
    folders: ['ownership', 'capacity', 'serializer', 'warm-pool', 'search', 'host', 'process'],
    uses: 'config and below, never each other: the concurrency primitives, search, host guards, processes',
  },
  {
    folders: ['execution-leases', 'stores', 'reconciliation', 'checkpoint'],
    uses: 'the primitives and below: execution leases, the store factories, reconciliation verdicts, workspace checkpoints',
  },
  {
    folders: ['provider-kit'],
    uses: 'everything below: what a provider is built from (ownership client, book, registry base)',
  },
  {
    folders: ['tools'],
    uses: 'everything below: the agent tool layer',
  },
  {
    folders: ['observability'],
    uses: 'everything below: OpenTelemetry and pino wiring, provider instrumentation',
  },
  {
    folders: ['testing'],
    uses: 'everything: conformance suites and test doubles (the /testing entry)',
  },
];

/** The diagram and table of docs/architecture.md, top layer first as a reader meets it. */
export function renderLayerDiagram() {
  const top = [...CORE_LAYERS].reverse();
  const lines = [
    '```',
    ...top.map((l) => l.folders.join(' · ')).flatMap((row, i) => (i === 0 ? [row] : ['   ↓', row])),
    '```',
    '',
  ];
  lines.push('| layer | folders | may use |', '| --- | --- | --- |');
  top.forEach((l, i) => {
    lines.push(
      `| ${CORE_LAYERS.length - 1 - i} | ${l.folders.map((f) => `\`${f}\``).join(', ')} | ${l.uses} |`,
    );
  });
  return lines.join('\n');
}
