import * as z from '../../domain/zod.js';
import { lazySchema } from '../../domain/lazy-schema.js';
import { RESOLUTIONS } from '../../domain/ports/reconciliation.js';
import { reconciliationDaySchema, reconciliationRailSchema } from '../../domain/reconciliation/schemas.js';
import { shiftDay } from '../../domain/use-cases/reconcile-day.js';
import { resolveReconciliationException } from '../../domain/use-cases/resolve-reconciliation-exception.js';
import { NotFoundError } from '../../domain/errors.js';
import { json, parseJsonBody, type HttpResult } from '../shared/http.js';
import { idSchema, pathParams, queryParams, reasonSchema } from './request.js';
import type { RouteContext } from './router.js';

/** The reconciliation routes (DESIGN 14): a day's runs, one run with its exceptions, an operator's resolution. */

export const runsQuery = lazySchema(() => z.strictObject({ date: z.optional(reconciliationDaySchema.check(z.describe('the UTC day; default yesterday, the day the schedule reconciles'))) }));
export const runParams = lazySchema(() => z.object({ date: reconciliationDaySchema, rail: reconciliationRailSchema }));
export const exceptionParams = lazySchema(() => z.object({ id: idSchema }));
export const resolveBody = lazySchema(() => z.strictObject({ resolution: z.enum(RESOLUTIONS), reason: reasonSchema }));

export async function listReconciliationRuns(ctx: RouteContext): Promise<HttpResult> {
  const { date } = queryParams(ctx.event, runsQuery);
  const day = date ?? shiftDay(ctx.deps.clock.now().toISOString().slice(0, 10), -1);
  return json(200, { date: day, items: await ctx.deps.reconciliation.listRuns(day), next: null });
}

export async function getReconciliationRun(ctx: RouteContext): Promise<HttpResult> {
  const { date, rail } = pathParams(ctx.params, runParams);
  const found = await ctx.deps.reconciliation.getRun(date, rail);
  if (!found) throw new NotFoundError(`no reconciliation run of ${date} on ${rail}`);
  return json(200, { ...found.run, exceptions: found.exceptions });
}

export async function resolveReconciliationExceptionRoute(ctx: RouteContext): Promise<HttpResult> {
  const { id } = pathParams(ctx.params, exceptionParams);
  const { resolution, reason } = parseJsonBody(ctx.event, resolveBody);
  const resolved = await resolveReconciliationException(ctx.deps, { exception_id: id, resolution, reason, actor: ctx.actor ?? 'unknown' });
  ctx.log.info({ exception_id: id, code: resolved.code, rail: resolved.rail, date: resolved.date, amount_cents: resolved.amount_cents, resolution, actor: ctx.actor }, 'reconciliation exception resolved');
  return json(200, resolved);
}
