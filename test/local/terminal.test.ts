import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../src/local/clock.js';
import { resolveOptions } from '../../src/local/options.js';
import type { LocalSystem } from '../../src/local/system.js';
import { startupBanner, tryCommands } from '../../src/local/terminal.js';

const saved = process.env.LOCAL_API_TOKEN;
afterEach(() => {
  if (saved === undefined) delete process.env.LOCAL_API_TOKEN;
  else process.env.LOCAL_API_TOKEN = saved;
});

function system(env: NodeJS.ProcessEnv, seeded: LocalSystem['seeded']): LocalSystem {
  return {
    url: 'http://127.0.0.1:3000',
    options: resolveOptions(env),
    clock: new SimulatedClock(new Date('2027-01-01T00:00:00Z')),
    seeded,
    startupMs: 4200,
  } as unknown as LocalSystem;
}

describe('the startup banner', () => {
  it('prints the documented default token and uses it in the Try lines; a chosen token is never printed', () => {
    delete process.env.LOCAL_API_TOKEN;
    const byDefault = startupBanner(system({}, undefined));
    expect(byDefault).toMatch(/API token +local-dev-token +\(the documented default; set LOCAL_API_TOKEN to choose your own\)/);
    for (const line of tryCommands(byDefault).filter((l) => l.includes('/v1/'))) expect(line).toContain('Bearer local-dev-token');
    expect(byDefault).not.toContain('$LOCAL_API_TOKEN');

    process.env.LOCAL_API_TOKEN = 'my-own-secret-token';
    const chosen = startupBanner(system({ LOCAL_API_TOKEN: 'my-own-secret-token' }, undefined));
    expect(chosen).not.toContain('my-own-secret-token');
    expect(chosen).toContain('not shown: the value of LOCAL_API_TOKEN in this shell');
    expect(chosen).toContain('Bearer $LOCAL_API_TOKEN');
  });

  it('says where the console and the API reference are', () => {
    const banner = startupBanner(system({}, undefined));
    expect(banner).toMatch(/console +http:\/\/127\.0\.0\.1:3000\/console/);
    expect(banner).toMatch(/API reference +http:\/\/127\.0\.0\.1:3000\/docs/);
  });

  it('suggests a seeded user only when the run seeded one', () => {
    expect(startupBanner(system({}, undefined))).not.toContain('seed-user');
    expect(startupBanner(system({}, undefined))).toContain('(not seeded)');
    expect(startupBanner(system({}, { users: 40, records: 120 } as never))).toContain('/v1/users/seed-user-0001/subscriptions');
  });

  it('says whether the schedule runs and how to turn it off', () => {
    expect(startupBanner(system({}, undefined))).toContain('every 60 s of wall time (--no-schedule turns it off)');
    expect(startupBanner(system({ COLLECTIONS_INTERVAL_MS: '0' }, undefined))).toContain('on demand only');
    expect(resolveOptions({}, { schedule: false }).collectionsIntervalMs).toBe(0);
  });
});
