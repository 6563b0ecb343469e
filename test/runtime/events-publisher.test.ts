import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/runtime/config.js';
import { eventsPublisherDeps } from '../../src/runtime/events-publisher.js';
import { sqs } from '../../src/runtime/wiring/sqs.js';

const env: NodeJS.ProcessEnv = { STAGE: 'prod', DYNAMO_REGION: 'us-east-1', EVENT_BUS_NAME: 'billing-prod', LOG_LEVEL: 'silent' };

describe('the events-publisher cold start (src/functions/events-publisher.ts)', () => {
  it('builds its publisher from the bus name alone: no table, secret or adapter', () => {
    const deps = eventsPublisherDeps({}, env);
    expect(typeof deps.publisher.publish).toBe('function');
    expect(deps.historyTableName).toBe('billing-activity-history');
  });

  it('refuses an entry that wires an adapter its manifest does not name, like every function', () => {
    expect(() => eventsPublisherDeps({ sqs }, env)).toThrow(ConfigError);
    expect(() => eventsPublisherDeps({ sqs }, env)).toThrow(/events-publisher's entry wires \[sqs\]; its manifest calls for \[\]/);
  });

  it('refuses a missing bus name', () => {
    const { EVENT_BUS_NAME: _omitted, ...rest } = env;
    expect(() => eventsPublisherDeps({}, rest)).toThrow(/EVENT_BUS_NAME/);
  });
});
