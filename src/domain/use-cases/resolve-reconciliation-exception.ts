import { NotFoundError } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { ReconciliationStore, Resolution, StoredException } from '../ports/reconciliation.js';
import { formatInstant } from '../time.js';

export interface ResolveReconciliationRequest {
  readonly exception_id: string;
  readonly resolution: Resolution;
  readonly reason: string;
  readonly actor: string;
}

/**
 * An operator closes a reconciliation exception (DESIGN 14): the resolution, the reason, who and when
 * are stored on the exception, which leaves its rail's open list. Unknown id: 404; resolved: 409.
 */
export async function resolveReconciliationException(deps: { readonly clock: Clock; readonly reconciliation: ReconciliationStore }, request: ResolveReconciliationRequest): Promise<StoredException> {
  const { exception_id, resolution, reason, actor } = request;
  const resolved = await deps.reconciliation.resolve(exception_id, { resolution, reason, actor, at: formatInstant(deps.clock.now()) });
  if (!resolved) throw new NotFoundError(`no reconciliation exception ${exception_id}`);
  return resolved;
}
