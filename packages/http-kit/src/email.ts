/**
 * The one place an email address is checked and normalised, wherever it comes from (a token, a
 * provider's profile, a request body, the CLI). Stored addresses are compared as text, so two
 * spellings of one address must become one string, and an address that no mail server would take
 * (too long for SMTP, or carrying invisible characters that make it display as another) is refused
 * before it reaches a row.
 */

/** RFC 5321 4.5.3.1: a path is at most 256 octets with its angle brackets, so 254 for the address. */
const MAX_ADDRESS = 254;
const MAX_LOCAL = 64;
const MAX_LABEL = 63;

/**
 * Control characters (C0, DEL, C1), format characters (bidi overrides and isolates, zero-width
 * joiners, the BOM), separators (line, paragraph, every space) and private-use or unassigned code
 * points: none belongs in an address, and several make one address display as another.
 */
const INVISIBLE_OR_SPACE = /[\p{Cc}\p{Cf}\p{Z}\p{Co}\p{Cn}\p{Cs}\s]/u;
/** RFC 5322 specials that are not allowed unquoted in a local part (quoted local parts are not accepted). */
const LOCAL_SPECIALS = /["(),:;<>@[\\\]]/;
/** A domain label: letters (any script, for internationalised domains), digits and inner hyphens. */
const LABEL = /^[\p{L}\p{M}\p{N}](?:[\p{L}\p{M}\p{N}-]*[\p{L}\p{M}\p{N}])?$/u;

export type EmailCheck = { ok: true; email: string } | { ok: false; problem: string };

/** The address in its stored form (NFC, trimmed, lower-cased), or what is wrong with it. */
export function normalizeEmail(raw: string): EmailCheck {
  const email = raw.normalize('NFC').trim().toLowerCase();
  const bad = (problem: string): EmailCheck => ({ ok: false, problem });
  if (!email) return bad('is empty');
  if (INVISIBLE_OR_SPACE.test(email)) return bad('contains a space, a control character or an invisible formatting character');
  const at = email.lastIndexOf('@');
  if (at <= 0 || at === email.length - 1) return bad('must be an address such as name@example.com');
  const local = email.slice(0, at);
  const domain = email.slice(at + 1);
  if (Buffer.byteLength(email) > MAX_ADDRESS) return bad(`is longer than ${MAX_ADDRESS} bytes (RFC 5321)`);
  if (Buffer.byteLength(local) > MAX_LOCAL) return bad(`has a part before @ longer than ${MAX_LOCAL} bytes (RFC 5321)`);
  if (LOCAL_SPECIALS.test(local) || local.startsWith('.') || local.endsWith('.') || local.includes('..')) {
    return bad('has characters or dots before @ that an address cannot have');
  }
  const labels = domain.split('.');
  if (labels.length < 2 || labels.some((l) => !LABEL.test(l) || Buffer.byteLength(l) > MAX_LABEL)) {
    return bad('must have a domain such as example.com after @');
  }
  return { ok: true, email };
}
