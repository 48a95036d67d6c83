// What a new password must be (NIST SP 800-63B 5.1.1.2, memorized secrets): long enough, not too long, any
// printable Unicode (NFKC-normalised first, as the hash normalises it: ./passwords.ts), spaces allowed but not
// only spaces, and not a password an attacker tries first: one on the list of common and breached passwords
// shipped with the program (./common-passwords.ts), one made of the service's name or the account's e-mail
// address, or a repetition or sequence ("aaaaaaaaaa", "1234567890"). No composition rules (no "a digit and a
// capital"): they make passwords harder to remember, not to guess. The answer says why, so the operator can
// pick another.
// The list is loaded at the first password set, not at every start (device mode never sets one).
import type * as CommonPasswords from './common-passwords';

export interface PasswordRules {
  minLength: number;
  maxLength: number;
}

/** Whose password it is: the account's e-mail address gives words a guesser tries first. */
export interface PasswordContext {
  email?: string;
}

/** The product's names, which a guesser at this service tries first. */
const SERVICE_WORDS = ['face-check', 'facecheck', 'face check', 'face_check'];
/** An e-mail local part shorter than this is not a word worth refusing (it would refuse single letters). */
const SHORTEST_CONTEXT_WORD = 3;
/** A password with fewer distinct characters than this is a repetition ("aaaaaaaaab"). */
const FEWEST_DISTINCT = 3;
/** Runs of at least this many characters in steps of one ("abcd", "9876") make a sequence. */
const SHORTEST_RUN = 3;
/** A password made of at most this many such runs ("1234abcd") is sequential. */
const MOST_RUNS = 3;

let common: Set<string> | undefined;

/** The form a password is compared and hashed in: NFKC (compatibility characters folded, composed). */
export function normalisedPassword(password: string): string {
  return password.normalize('NFKC');
}

/** Why `password` cannot be set, worded for the operator; undefined when it can. */
export function passwordProblem(password: string, rules: PasswordRules, context: PasswordContext = {}): string | undefined {
  if (/[\p{Cc}\p{Cs}]/u.test(password)) {
    return 'control characters (such as NUL, tab or line breaks) are not allowed; letters, digits, symbols and spaces are';
  }
  const normal = normalisedPassword(password);
  const length = [...normal].length;
  if (length < rules.minLength) return `at least ${rules.minLength} characters`;
  if (length > rules.maxLength) return `at most ${rules.maxLength} characters`;
  if (/^[\s\p{Cf}]*$/u.test(normal)) return 'it is only spaces; use words or other characters too';
  const lower = normal.toLowerCase();
  common ??= new Set((require('./common-passwords') as typeof CommonPasswords).COMMON_PASSWORDS);
  const squeezed = lower.replace(/\s+/gu, '');
  // "baseball2024", "passw0rd!!": a listed password with digits or symbols added at its end is as well known.
  const stem = squeezed.replace(/[\d\p{P}\p{S}]+$/u, '');
  if (common.has(lower) || common.has(squeezed) || common.has(stem)) {
    return 'it is on the list of common and breached passwords that guessers try first; choose a less common one';
  }
  const chars = [...squeezed];
  if (new Set(chars).size < FEWEST_DISTINCT || isRepetition(chars)) return 'it repeats a few characters; choose something less predictable';
  if (isSequence(chars)) return 'it is a sequence of characters (like "abcdef" or "123456"); choose something less predictable';
  const word = contextWordIn(lower, context);
  if (word) return `it is made from ${word}; choose something that does not contain it`;
  return undefined;
}

/** The whole string is one shorter string repeated ("abcabcabc"). */
function isRepetition(chars: string[]): boolean {
  const n = chars.length;
  for (let unit = 1; unit <= n / 2; unit++) {
    if (n % unit !== 0) continue;
    if (chars.every((c, i) => c === chars[i % unit])) return true;
  }
  return false;
}

/** The step from one character to the next: +1 or -1 (digits wrap: "7890"), else 0. */
function stepOf(a: string, b: string): number {
  if (/\d/.test(a) && /\d/.test(b)) {
    const d = (Number(b) - Number(a) + 10) % 10;
    return d === 1 ? 1 : d === 9 ? -1 : 0;
  }
  const d = b.codePointAt(0)! - a.codePointAt(0)!;
  return d === 1 || d === -1 ? d : 0;
}

/** Made only of a few runs of consecutive characters ("abcdefghij", "1234abcd", "9876543210"). */
function isSequence(chars: string[]): boolean {
  let runs = 0;
  let i = 0;
  while (i < chars.length) {
    let j = i + 1;
    const step = j < chars.length ? stepOf(chars[i], chars[j]) : 0;
    if (step === 0) return false;
    while (j < chars.length && stepOf(chars[j - 1], chars[j]) === step) j++;
    if (j - i < SHORTEST_RUN) return false;
    runs++;
    i = j;
  }
  return runs > 0 && runs <= MOST_RUNS;
}

/**
 * The context word (the service's name, the e-mail address or its local part) the password is made from: it
 * holds the word and what is left without it is short or predictable ("facecheck2024", "alice123!").
 */
function contextWordIn(lower: string, context: PasswordContext): string | undefined {
  const words: Array<{ word: string; label: string }> = SERVICE_WORDS.map((word) => ({ word, label: 'the name of this service' }));
  const email = context.email?.trim().toLowerCase();
  if (email) {
    words.push({ word: email, label: 'your e-mail address' });
    const local = email.split('@')[0];
    if ([...local].length >= SHORTEST_CONTEXT_WORD) words.push({ word: local, label: 'your e-mail address' });
    const joined = local.replace(/[._+-]+/g, '');
    if (joined !== local && [...joined].length >= SHORTEST_CONTEXT_WORD) words.push({ word: joined, label: 'your e-mail address' });
    for (const part of local.split(/[._+-]+/)) {
      if ([...part].length >= SHORTEST_CONTEXT_WORD + 1) words.push({ word: part, label: 'your e-mail address' });
    }
  }
  for (const { word, label } of words) {
    if (!lower.includes(word)) continue;
    const rest = [...lower.split(word).join('').replace(/[\s\p{P}\p{S}]+/gu, '')];
    if (rest.length < SHORTEST_RUN + 2 || /^\d+$/.test(rest.join('')) || new Set(rest).size < FEWEST_DISTINCT
      || isRepetition(rest) || isSequence(rest)) return label;
  }
  return undefined;
}
