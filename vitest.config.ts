import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most files wait on DynamoDB Local or a child runtime, not the CPU: two at a time on 2 cores (vitest's default there is one).
    maxWorkers: 2,
    reporters: ['default'],
  },
});
