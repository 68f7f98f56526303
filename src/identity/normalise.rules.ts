// Contact values as stored and compared (docs/design.md "Identity"), and as the
// identity-verification hash covers them (verification.rules.ts).

export type ContactType = 'EMAIL' | 'PHONE';

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Spaces, dashes, dots and brackets removed; a leading + kept. */
export function normalisePhone(phone: string): string {
  return phone.trim().replace(/[\s().-]/g, '');
}
