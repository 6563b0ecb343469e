import { describe, expect, it } from 'vitest';
import { ACH_RATE_PARTITION } from '../../src/adapters/dynamodb/ach-rate-counters.js';
import { GAUGE_PARTITION } from '../../src/adapters/dynamodb/gauge-counters.js';
import { FUNCTIONS } from '../../src/manifest/index.js';
import { isGranted, neededAccess } from '../../src/runtime/grants.js';

/** The guard's reading of a Query, as IAM's dynamodb:LeadingKeys reads it. */
describe('grant guard: base-table queries narrowed to partitions', () => {
  const job = FUNCTIONS['collections-job'];
  const query = (pk: unknown) => neededAccess('QueryCommand', { TableName: 't', KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :from AND :to', ExpressionAttributeValues: { ':pk': pk } })[0]!;

  it('reads the partition a key condition names, marshalled or not', () => {
    expect(query({ S: GAUGE_PARTITION }).partition).toBe(GAUGE_PARTITION);
    expect(query('user-1').partition).toBe('user-1');
  });

  it("lets the collections-job query only its counters' partitions of the billing table", () => {
    expect(isGranted(job, 'billingActivity', query({ S: GAUGE_PARTITION }))).toBe(true);
    expect(isGranted(job, 'billingActivity', query({ S: ACH_RATE_PARTITION }))).toBe(true);
    expect(isGranted(job, 'billingActivity', query({ S: 'user-1' }))).toBe(false);
    expect(isGranted(job, 'payments', query({ S: 'USER#u1' }))).toBe(false);
    expect(isGranted(job, 'billingActivity', { table: 't', action: 'query' })).toBe(false);
  });

  it('leaves a grant without partitions as wide as its action', () => {
    expect(isGranted(FUNCTIONS['webhook-balance-worker'], 'billingActivity', query({ S: 'user-1' }))).toBe(true);
  });
});
