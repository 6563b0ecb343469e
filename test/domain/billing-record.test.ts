import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freshStamp, startStampSequence } from '../../src/domain/billing-record.js';

const NOW = new Date('2026-01-01T00:00:00.000Z');

describe('freshStamp', () => {
  it('numbers the sub-millisecond digits from where the runtime started the sequence', () => {
    startStampSequence(41);
    expect(freshStamp(NOW)).toBe('2026-01-01T00:00:00.000000042Z');
    expect(freshStamp(NOW)).toBe('2026-01-01T00:00:00.000000043Z');
    startStampSequence(999_999);
    expect(freshStamp(NOW)).toBe('2026-01-01T00:00:00.000000000Z');
    startStampSequence(-1);
    expect(freshStamp(NOW)).toBe('2026-01-01T00:00:00.000000000Z');
  });

  it('is in a later millisecond than the stamp it follows, never before now', () => {
    startStampSequence(0);
    expect(freshStamp(NOW, '2026-01-01T00:00:00.005000000Z')).toBe('2026-01-01T00:00:00.006000001Z');
    expect(freshStamp(NOW, '2025-12-31T23:59:59.999000000Z')).toBe('2026-01-01T00:00:00.000000002Z');
  });
});

describe('randomness', () => {
  it('never comes from inside the domain: ids and the stamp sequence start come through the runtime', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : []));
    const random = files('src/domain').filter((file) => /Math\.random|crypto\.|randomUUID|getRandomValues/.test(readFileSync(file, 'utf8')));
    expect(random).toEqual([]);
  });
});
