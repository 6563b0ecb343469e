import { NotFoundError } from '../../domain/errors.js';
import type { HttpResult } from '../shared/http.js';
import type { Caller, RouteContext } from './router.js';

/**
 * What a member token may see and reach (DESIGN 8): only its own user's resources, each other
 * answered 404 exactly as a missing one (no probing of ids), and a member projection of every
 * answer: no decision context (`data_*`: balances, thresholds, risk signals) and staff actors as
 * `staff`. Applied to the whole answer in one place, so a new member route cannot leak more.
 */

/** Actors a member may see by name: itself, and the system's own (`system:`, `stripe:`, `ach:`, `membership:`). */
const SYSTEM_ACTOR = /^(system|stripe|ach|membership):/;

/** A member asking for another user's resource: the same 404 as for one that does not exist. */
export function assertOwnUser(ctx: Pick<RouteContext, 'caller'>, userId: string, notFound: string): void {
  if (ctx.caller?.kind === 'member' && ctx.caller.userId !== userId) throw new NotFoundError(notFound);
}

/** The path's `{userId}` of a member route, checked before anything is read, locked or looked up. */
export function assertOwnPath(caller: Caller, params: Readonly<Record<string, string | undefined>>): void {
  const userId = params.userId;
  if (caller.kind === 'member' && userId !== undefined && userId !== caller.userId) throw new NotFoundError(`user ${userId} not found`);
}

export function memberProjection(value: unknown, caller: Extract<Caller, { kind: 'member' }>): unknown {
  if (Array.isArray(value)) return value.map((item) => memberProjection(item, caller));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (key.startsWith('data_')) continue;
    if (key === 'actor' && typeof item === 'string') {
      out.actor = item === caller.sub || item === caller.userId || SYSTEM_ACTOR.test(item) ? item : 'staff';
      continue;
    }
    out[key] = memberProjection(item, caller);
  }
  return out;
}

/** The answer as a member sees it (JSON bodies only; errors carry nothing to hide). */
export function projectForMember(result: HttpResult, caller: Caller | undefined): HttpResult {
  if (caller?.kind !== 'member' || typeof result !== 'object' || typeof result.body !== 'string' || (result.statusCode ?? 200) >= 300) return result;
  try {
    return { ...result, body: JSON.stringify(memberProjection(JSON.parse(result.body), caller)) };
  } catch {
    return result;
  }
}
