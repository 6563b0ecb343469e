import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allTables, type TableId } from '../../src/adapters/dynamodb/table-definitions.js';
import { allFunctions, QUEUES, queuesOf, ROUTES, routeKey, SERVICES, type ManifestRoute, type ServiceEntry } from '../../src/manifest/index.js';

const ROOT = resolve(import.meta.dirname, '../..');
const routes = ROUTES as readonly ManifestRoute[];

describe('the manifest (src/manifest)', () => {
  describe.each(allFunctions())('%s', (name, manifest) => {
    it('names an entry module that exports the Lambda handler', () => {
      const file = join(ROOT, manifest.entry);
      expect(existsSync(file), manifest.entry).toBe(true);
      expect(readFileSync(file, 'utf8')).toMatch(/export const handler\b/);
    });

    it('grants only tables and indexes that exist, each grant naming at least one action or index', () => {
      for (const [tableId, grant] of Object.entries(manifest.tables)) {
        const definition = allTables[tableId as TableId];
        expect(definition, tableId).toBeDefined();
        const indexes = definition.globalSecondaryIndexes.map((i) => i.indexName);
        for (const index of grant.indexes ?? []) expect(indexes, `${tableId} has ${index}`).toContain(index);
        const actions = (grant.read?.length ?? 0) + (grant.write?.length ?? 0) + (grant.delete ? 1 : 0) + (grant.indexes?.length ?? 0);
        expect(actions, `${tableId} grant is empty`).toBeGreaterThan(0);
      }
    });

    it('holds the secrets its services need (a read-only key where it only reads), and never both keys of one service', () => {
      const held: readonly string[] = manifest.secrets ?? [];
      for (const service of manifest.services ?? []) {
        const entry: ServiceEntry = SERVICES[service];
        const readOnly = entry.readOnlySecrets ?? [];
        const readsOnly = readOnly.length > 0 && readOnly.every((secret) => held.includes(secret));
        const needs = readsOnly ? readOnly : (entry.secrets ?? []);
        for (const secret of needs) expect(held, `${service} needs ${secret}`).toContain(secret);
        if (readsOnly) for (const secret of entry.secrets ?? []) expect(held, `${service}: the read-only key or the full one, not both`).not.toContain(secret);
      }
    });

    it(manifest.trigger.kind === 'http' ? 'serves at least one route' : 'serves no route', () => {
      expect(routes.some((r) => r.target === name)).toBe(manifest.trigger.kind === 'http');
    });
  });

  it('routes only to HTTP-triggered functions, each route key once', () => {
    const functions = new Map(allFunctions());
    for (const route of routes) expect(functions.get(route.target)?.trigger.kind, routeKey(route)).toBe('http');
    const keys = routes.map(routeKey);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('gives every queue at most one consumer, and a consumer to every queue something sends to', () => {
    for (const queue of Object.keys(QUEUES)) {
      const consumers = allFunctions().filter(([, m]) => [...queuesOf(m.trigger), ...(m.alsoConsumes ? queuesOf(m.alsoConsumes) : [])].includes(queue as keyof typeof QUEUES));
      expect(consumers.length, queue).toBeLessThanOrEqual(1);
      const senders = allFunctions().filter(([, m]) => m.sendsTo?.includes(queue as keyof typeof QUEUES));
      if (senders.length > 0) expect(consumers.length, `${queue} has senders and no consumer`).toBe(1);
    }
  });
});
