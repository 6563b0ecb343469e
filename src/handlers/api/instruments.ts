import * as z from '../../domain/zod.js';
import { lazySchema } from '../../domain/lazy-schema.js';
import { HOLD_CODES, HOLD_RULES } from '../../domain/instruments/holds.js';
import type { InstrumentsItem } from '../../domain/instruments/instrument.js';
import { releaseInstrumentHold } from '../../domain/use-cases/release-instrument-hold.js';
import { json, parseJsonBody, type HttpResult } from '../shared/http.js';
import { idSchema, pathParams, reasonSchema } from './request.js';
import type { RouteContext } from './router.js';

/** A user's instruments and their holds (DESIGN 3.2), and an operator's release of a releasable hold. */

export const instrumentsParams = lazySchema(() => z.object({ userId: idSchema }));
export const releaseHoldParams = lazySchema(() => z.object({ userId: idSchema, instrumentId: idSchema, code: z.enum(HOLD_CODES) }));
export const releaseHoldBodySchema = lazySchema(() => z.strictObject({ reason: reasonSchema }));

export function instrumentsView(item: InstrumentsItem): Record<string, unknown> {
  const ids = new Set([...Object.keys(item.instruments), ...Object.keys(item.holds)]);
  return {
    user_id: item.user_id,
    items: [...ids].sort().map((id) => ({
      ...(item.instruments[id] ?? { instrument_id: id }),
      holds: Object.values(item.holds[id] ?? {}).map((hold) => ({ ...hold, operator_releasable: HOLD_RULES[hold.class].operator_releasable })),
      presentments: item.presentments[id] ?? [],
      entries: Object.values(item.entries).filter((e) => e.instrument_id === id),
    })),
  };
}

export async function getInstruments(ctx: RouteContext): Promise<HttpResult> {
  const { userId } = pathParams(ctx.params, instrumentsParams);
  return json(200, instrumentsView(await ctx.deps.instruments.get(userId)));
}

export async function releaseHold(ctx: RouteContext): Promise<HttpResult> {
  const { userId, instrumentId, code } = pathParams(ctx.params, releaseHoldParams);
  const { reason } = parseJsonBody(ctx.event, releaseHoldBodySchema);
  const released = await releaseInstrumentHold(ctx.deps, { user_id: userId, instrument_id: instrumentId, code, actor: ctx.actor ?? 'unknown', reason });
  ctx.log.info({ user_id: userId, instrument_id: instrumentId, hold_code: code, actor: ctx.actor, ...released }, 'instrument hold released');
  return json(200, { status: 'released', instrument_id: instrumentId, hold_code: code, ...released, instruments: instrumentsView(await ctx.deps.instruments.get(userId)) });
}
