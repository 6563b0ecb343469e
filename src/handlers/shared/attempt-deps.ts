import type { UseCaseDeps } from '../../domain/use-cases/deps.js';
import type { AppDeps } from '../../runtime/deps.js';
import type { Logger } from '../../runtime/logger.js';

/** The collection attempt's dependencies from the app's, with full errors going to the log. */
export function attemptDepsOf(deps: AppDeps, logger: Logger): UseCaseDeps {
  return {
    clock: deps.clock,
    locks: deps.locks,
    billing: deps.billing,
    processor: deps.processor,
    accounts: deps.accounts,
    ids: deps.ids,
    onError: (error, info) => logger.error({ err: error, ...info }, 'collection attempt failed'),
    onUnknownDecline: (info) => logger.warn(info, 'unknown decline code; classified retry_later'),
    ...(deps.settings.lockLeaseMs !== undefined ? { lockLeaseMs: deps.settings.lockLeaseMs } : {}),
    ...(deps.settings.lockHeartbeatMs !== undefined ? { lockHeartbeatMs: deps.settings.lockHeartbeatMs } : {}),
    ...(deps.settings.accountClockSkewMs !== undefined ? { accountClockSkewMs: deps.settings.accountClockSkewMs } : {}),
    ...(deps.personDebits ? { personDebits: deps.personDebits } : {}),
  };
}
