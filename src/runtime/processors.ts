import { RAILS, SERVICES, type FunctionManifest, type Rail, type ServiceEntry, type ServiceId } from '../manifest/index.js';
import { ConfigError } from './config.js';
import type { ServiceClients } from './wiring/types.js';

/** The rails a service charges on, as its SERVICES entry declares them. */
function railsOf(id: ServiceId): readonly Rail[] {
  return (SERVICES[id] as ServiceEntry).rails ?? [];
}

/** Whether one of a function's services charges on `rail`. */
export function callsProcessorOf(manifest: FunctionManifest, rail: Rail): boolean {
  return (manifest.services ?? []).some((id) => railsOf(id).includes(rail));
}

/** Whether a function's services charge on every rail: only then is it given a processor. */
export function chargesEveryRail(manifest: FunctionManifest): boolean {
  return RAILS.every((rail) => callsProcessorOf(manifest, rail));
}

/**
 * The one processor a function submits to, over its services' clients: each request goes to the
 * processor of the service that runs its rail. Undefined when none of its services is a processor.
 */
export function processorByRail(clients: Partial<Record<ServiceId, ServiceClients>>): ServiceClients['processor'] {
  const byRail = new Map<Rail, NonNullable<ServiceClients['processor']>>();
  for (const [id, built] of Object.entries(clients) as [ServiceId, ServiceClients][]) {
    if (built.processor) for (const rail of railsOf(id)) byRail.set(rail, built.processor);
  }
  if (byRail.size === 0) return undefined;
  const of = (rail: Rail) => {
    const processor = byRail.get(rail);
    if (!processor) throw new ConfigError(`no processor is wired for the ${rail} rail`);
    return processor;
  };
  return {
    submit: (request, signal) => of(request.rail).submit(request, signal),
    findRefund: async (query, signal) => {
      const processor = of(query.rail);
      if (!processor.findRefund) throw new ConfigError(`the ${query.rail} processor cannot look up refunds`);
      return processor.findRefund(query, signal);
    },
  };
}
