import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ClockBackwardsError, SavedClockAheadError, SimulatedClock } from '../../src/local/clock.js';
import { controlRoutes, type LocalControl } from '../../src/local/control-routes.js';
import { createLogger } from '../../src/runtime/logger.js';

const dirs: string[] = [];
const clockFile = () => {
  const dir = mkdtempSync(join(tmpdir(), 'billing-clock-'));
  dirs.push(dir);
  return join(dir, 'clock.json');
};
const savedNow = (file: string) => Date.parse((JSON.parse(readFileSync(file, 'utf8')) as { now: string }).now);

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the simulated clock', () => {
  it('moves forward and refuses to move back', () => {
    const clock = new SimulatedClock(new Date('2027-01-01T00:00:00Z'));
    expect(clock.set(new Date('2027-02-01T00:00:00Z')).toISOString()).toMatch(/^2027-02-01T00:00:00/);
    expect(() => clock.set(new Date('2027-01-15T00:00:00Z'))).toThrow(ClockBackwardsError);
    expect(clock.now().getTime()).toBeGreaterThanOrEqual(Date.parse('2027-02-01T00:00:00Z'));
    expect(() => clock.advance(-1)).toThrow(ClockBackwardsError);
  });

  it('refuses a --now earlier than the saved reading, accepts a later one, and resumes the saved one without', () => {
    const file = clockFile();
    new SimulatedClock(new Date('2027-06-01T00:00:00Z'), file).stop();
    expect(() => SimulatedClock.restore(file, '2027-05-31T23:59:59Z', new Date())).toThrow(SavedClockAheadError);
    expect(() => SimulatedClock.restore(file, '2027-05-31T23:59:59Z', new Date())).toThrow(
      /^--now 2027-05-31T23:59:59Z is before the saved simulated clock 2027-06-01T00:00:00\.\d+Z \(.*clock\.json\); the clock only moves forward/,
    );
    expect(SimulatedClock.restore(file, undefined, new Date('2020-01-01T00:00:00Z')).now().getTime()).toBeGreaterThanOrEqual(Date.parse('2027-06-01T00:00:00Z'));
    expect(SimulatedClock.restore(file, '2027-07-01T00:00:00Z', new Date()).now().toISOString()).toMatch(/^2027-07-01T00:00:0/);
  });

  it('writes its reading every second while it runs (a crash loses at most a second), by rename', async () => {
    const file = clockFile();
    const clock = new SimulatedClock(new Date('2027-01-01T00:00:00Z'), file);
    clock.startPersisting(1_000);
    try {
      await new Promise((r) => setTimeout(r, 2_300));
      // What a SIGKILL now would leave on disk is at most a second (plus timer jitter) behind.
      expect(clock.now().getTime() - savedNow(file)).toBeLessThanOrEqual(1_250);
      expect(savedNow(file)).toBeGreaterThanOrEqual(Date.parse('2027-01-01T00:00:01Z'));
      expect(readdirSync(join(file, '..'))).toEqual(['clock.json']);
    } finally {
      clock.stop();
    }
  });

  it('answers 409 clock_backwards on POST /local/clock with an earlier time, and leaves the clock alone', async () => {
    const clock = new SimulatedClock(new Date('2027-03-01T00:00:00Z'));
    const control = {
      clock,
      logger: createLogger({ level: 'silent' }),
      health: () => ({ ready: true, parts: {} }),
      afterClockChange: async () => undefined,
    } as unknown as LocalControl;
    const routes = controlRoutes(control);
    const post = (body: unknown) => routes({ method: 'POST', url: '/local/clock', headers: {}, body: JSON.stringify(body) }, '/local/clock');
    const back = await post({ now: '2027-02-28T00:00:00Z' });
    expect(back!.status).toBe(409);
    expect(JSON.parse(back!.body)).toMatchObject({ error: { code: 'clock_backwards', details: { requested: '2027-02-28T00:00:00.000000000Z' } } });
    expect(clock.now().getTime()).toBeGreaterThanOrEqual(Date.parse('2027-03-01T00:00:00Z'));
    expect((await post({ now: '2027-03-02T00:00:00Z' }))!.status).toBe(200);
  });
});
