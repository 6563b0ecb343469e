import { describe, expect, it } from 'vitest';
import { createHandler, HANDLER_FACTORIES } from '../../src/functions/handler-factories.js';
import { FUNCTION_NAMES } from '../../src/manifest/index.js';

/** The local runtime creates every function from this table: a function missing from it would never run under npm start. */
describe('the handler factory table', () => {
  it('names exactly the manifest functions', () => {
    expect(Object.keys(HANDLER_FACTORIES).sort()).toEqual([...FUNCTION_NAMES].sort());
  });

  it('creates a handler for each function from its factory', () => {
    const untouched = new Proxy({}, { get: (_t, property) => (property === 'then' ? undefined : new Proxy(() => undefined, { get: () => undefined })) });
    for (const name of FUNCTION_NAMES) expect(typeof createHandler(name, untouched as never), name).toBe('function');
  });
});
