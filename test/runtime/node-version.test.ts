import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BILLING_RUNTIME } from '../../lib/constructs/billing-function.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  devDependencies: Record<string, string>;
};

describe('the Node the tests run on', () => {
  it('is the major version the Lambdas run, brought by the project itself', () => {
    const lambdaMajor = BILLING_RUNTIME.name.replace(/^nodejs(\d+)\.x$/, '$1');
    expect(process.versions.node.split('.')[0]).toBe(lambdaMajor);
    expect(pkg.devDependencies.node?.split('.')[0]).toBe(lambdaMajor);
  });
});
