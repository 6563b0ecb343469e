import { createEventsPublisherHandler } from '../handlers/events-publisher.js';
import { eventsPublisherEntry } from '../runtime/events-publisher.js';

/** The events-publisher Lambda: its handler with the bus client its manifest names (putsEventsOn billing), and no other adapter (src/manifest/functions.ts). */
export const handler = eventsPublisherEntry(createEventsPublisherHandler, {});
