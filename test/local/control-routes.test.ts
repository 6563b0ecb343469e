import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../src/local/clock.js';
import { controlRoutes, type LocalControl } from '../../src/local/control-routes.js';

describe('local control routes', () => {
  it('answer a failing part with a generic 500 and a reference, the error only in the log', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => lines.push(line) });
    const control = {
      clock: new SimulatedClock(new Date('2027-03-01T00:00:00Z')),
      logger,
      health: () => ({ ready: true, parts: {} }),
      runCollections: async () => {
        throw new Error('ResourceNotFoundException: table billing-activity-local-secret-name not found');
      },
      afterClockChange: async () => undefined,
    } as unknown as LocalControl;
    const answer = await controlRoutes(control)({ method: 'POST', url: '/local/collections/run', headers: {}, body: '' }, '/local/collections/run');
    expect(answer!.status).toBe(500);
    const body = JSON.parse(answer!.body) as { error: { code: string; message: string; details: { reference: string } } };
    expect(body.error.code).toBe('internal_error');
    expect(answer!.body).not.toContain('billing-activity');
    const logged = lines.map((l) => JSON.parse(l) as { reference?: string; err?: { message: string } }).find((l) => l.reference === body.error.details.reference);
    expect(logged?.err?.message).toContain('billing-activity-local-secret-name');
  });
});
