import type { FunctionManifest } from '../../manifest/index.js';
import { ConfigError } from '../config.js';
import type { Wiring } from './types.js';

/** The adapters a manifest calls for, by name (`services.<id>` for each outside service); the entry module must hand over exactly these. */
export function wiringFor(manifest: FunctionManifest): string[] {
  return [
    ...((manifest.secrets ?? []).length > 0 ? ['secretsManager'] : []),
    ...((manifest.sendsTo ?? []).length > 0 ? ['sqs'] : []),
    ...(manifest.services ?? []).map((id) => `services.${id}`),
  ];
}

function wired(wiring: Wiring): string[] {
  return [
    ...(wiring.secretsManager ? ['secretsManager'] : []),
    ...(wiring.sqs ? ['sqs'] : []),
    ...Object.keys(wiring.services ?? {}).map((id) => `services.${id}`),
  ];
}

/** Refuses (at cold start) an entry whose adapters differ from its manifest: an extra SDK in the bundle, or a missing one. */
export function assertWiring(name: string, manifest: FunctionManifest, wiring: Wiring): void {
  const expected = wiringFor(manifest).sort();
  const given = wired(wiring).sort();
  if (expected.join() !== given.join()) {
    throw new ConfigError(`${name}'s entry wires [${given.join(', ')}]; its manifest calls for [${expected.join(', ')}]`);
  }
}
