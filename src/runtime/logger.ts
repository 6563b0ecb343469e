import pino, { type Logger, type LoggerOptions } from 'pino';

/** Paths that must never reach a log line: secrets, tokens, account and card numbers, raw bodies. */
export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'headers["stripe-signature"]',
  'headers["x-ach-signature"]',
  'headers["x-balance-signature"]',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'account_number',
  '*.account_number',
  'routing_number',
  '*.routing_number',
  'card_number',
  '*.card_number',
  'body',
  '*.body',
  'rawBody',
];

/**
 * The one logger configuration. `destination` replaces stdout (the bench sends production-level
 * lines to a file, which costs the same write per line as stdout).
 */
export function createLogger(options: { level?: string; pretty?: boolean; base?: Record<string, unknown>; destination?: pino.DestinationStream } = {}): Logger {
  const config: LoggerOptions = {
    level: options.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: options.base ?? {},
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  if (options.pretty) {
    return pino({ ...config, transport: { target: 'pino-pretty', options: { colorize: true, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } });
  }
  return options.destination ? pino(config, options.destination) : pino(config);
}

export type { Logger };
