// pino JSON logs. Secrets never reach a log line: the redaction paths cover
// the headers and fields that can carry them.
import pino from 'pino';

export type Logger = pino.Logger;

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'trackway' },
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', '*.password', '*.authToken', '*.bearer_token', '*.token', '*.org_token'],
        censor: '[redacted]',
      },
      serializers: { err: pino.stdSerializers.err },
    },
    destination ?? pino.destination({ sync: false }),
  );
}
