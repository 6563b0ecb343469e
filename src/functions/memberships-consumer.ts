import { createMembershipsConsumerHandler } from '../handlers/memberships-consumer.js';
import { lambdaEntry } from '../runtime/lambda.js';
import { collectingServices } from '../runtime/wiring/collecting.js';
import { secretsManager } from '../runtime/wiring/secrets-manager.js';

/** The memberships-consumer Lambda: its handler, wired with exactly the adapters its manifest names (src/manifest/functions.ts). */
export const handler = lambdaEntry('memberships-consumer', createMembershipsConsumerHandler, { secretsManager, services: collectingServices });
