import type { ReconciliationFigures } from './reconciliation.js';

const n = (value: number) => value.toLocaleString('en-US');

/** The reconciliation section of docs/benchmarks.md: reads per 1,000 movements, flat in the table's size. */
export function renderReconciliation(figures: readonly ReconciliationFigures[], load?: readonly number[]): string[] {
  const movements = figures[0]?.movements ?? 0;
  const rows = figures.map((f) => {
    const requests = Object.values(f.requests).reduce((a, b) => a + b, 0);
    const kinds = Object.entries(f.requests).map(([command, count]) => `${count} ${command}`).join(', ');
    const held = f.daysInTable === 1 ? 'the day only' : `the day + ${f.daysInTable - 1} days`;
    return `| ${held} | ${f.continuations === 0 ? '0' : `${f.continuations} (every 5 pages)`} | ${requests} (${kinds}) | ${n(f.itemsRead)} | ${f.readUnits} | ${f.per1000.requests} | ${n(f.per1000.itemsRead)} | ${f.per1000.readUnits} | ${n(f.per1000.ms)} |`;
  });
  return [
    '### Reconciliation: reads per 1,000 movements of the day (`--only reconciliation`)',
    '',
    `One day of ${n(movements)} pinless debits (both sides agree), the processor's report in memory (100 items a page), DynamoDB Local${load ? `, load average ${load[0]} at the section's start` : ''}; wall times are indicative only.`,
    '',
    '| table holds | hand-overs | requests | items read | read units | per 1,000: requests | items | RRU | ms |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    'Flat when the table holds more days: the Queries are the window\'s days × shards and the items read are the day\'s. A hand-over costs a GetItem, an UpdateItem, a PutItem per 500 staged rows and, at the end, a Query of the staged chunks.',
    '',
  ];
}
