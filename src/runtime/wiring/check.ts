import type { FunctionManifest } from '../../manifest/index.js';
import { ConfigError } from '../config.js';
import type { Wiring } from './types.js';

/** The adapters a manifest calls for; the entry module must hand over exactly these. */
export function wiringFor(manifest: FunctionManifest): (keyof Wiring)[] {
  const services = new Set(manifest.services ?? []);
  const needed: (keyof Wiring)[] = [];
  if ((manifest.secrets ?? []).length > 0) needed.push('secretsManager');
  if ((manifest.sendsTo ?? []).length > 0) needed.push('sqs');
  if (services.has('stripe')) needed.push('stripe');
  if (services.has('payments') || services.has('accounts')) needed.push('paymentsService');
  return needed;
}

/** Refuses (at cold start) an entry whose adapters differ from its manifest: an extra SDK in the bundle, or a missing one. */
export function assertWiring(name: string, manifest: FunctionManifest, wiring: Wiring): void {
  const expected = wiringFor(manifest).sort();
  const given = (Object.keys(wiring) as (keyof Wiring)[]).filter((k) => wiring[k] !== undefined).sort();
  if (expected.join() !== given.join()) {
    throw new ConfigError(`${name}'s entry wires [${given.join(', ')}]; its manifest calls for [${expected.join(', ')}]`);
  }
}
