import type { Logger } from '../runtime/logger.js';

/**
 * The logger the handlers and pollers get locally: their `info` lines (one per attempt, request,
 * event or batch, as CloudWatch wants them in production) are written at `debug`, so the local
 * default (`info`) shows one line per collections run and per control action; `LOG_LEVEL=debug`
 * shows everything. Warnings and errors keep their level.
 */
export function demoteInfo(logger: Logger): Logger {
  return new Proxy(logger, {
    get(target, property) {
      if (property === 'info') return target.debug.bind(target);
      if (property === 'child') return (...args: Parameters<Logger['child']>) => demoteInfo(target.child(...args) as unknown as Logger);
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
