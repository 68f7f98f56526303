// Contact values as stored and compared (DESIGN.md "Identity").

export type ContactType = 'EMAIL' | 'PHONE';

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Spaces, dashes, dots and brackets removed; a leading + kept. */
export function normalisePhone(phone: string): string {
  return phone.trim().replace(/[\s().-]/g, '');
}

/** The contacts an identify payload names, normalised; empty values are ignored. */
export function contactsOf(payload: { email?: string; phone?: string }): { type: ContactType; value: string }[] {
  const out: { type: ContactType; value: string }[] = [];
  const email = payload.email ? normaliseEmail(payload.email) : '';
  if (email) out.push({ type: 'EMAIL', value: email });
  const phone = payload.phone ? normalisePhone(payload.phone) : '';
  if (phone.replace('+', '')) out.push({ type: 'PHONE', value: phone });
  return out;
}
