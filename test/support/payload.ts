// The base64url of a value's JSON: how a tracker call carries its payload
// (identify, event properties) in a path segment. Tests send raw values on
// purpose (blanks, extra fields, garbage), so this encodes exactly what it is
// given; encodeIdentifyPayload in src/client trims and filters an identify first.
export const b64url = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
