// The last verified licence document, kept beside the store (<storage path>/licence-document.json, 0600,
// replaced atomically) for one purpose: [licence] offline_grace_hours, a restart during a short outage of
// the cloud. The file is never trusted as written: it is verified against the pinned key again and checked
// for this device, this key and the licence's expiry, and honoured only while younger than the grace.
//
// The risk of a grace above 0: a device cut off from the cloud (on purpose or not) keeps serving on a
// licence that may have been revoked meanwhile, for up to the grace after the document was issued (never
// past the document's own validUntil). With 0, the default, a device starts only with the cloud's answer.
import type crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { writeKeyFileAtomically } from '../../storage/crypto/key-file';
import {
  checkDocumentFor, LicenceDocumentError, verifyLicenceDocument, type LicenceDocument, type SignedLicence,
} from '../licence-document';

export const STORED_DOCUMENT_FILE = 'licence-document.json';

export function storedDocumentPath(storagePath: string): string {
  return path.join(storagePath, STORED_DOCUMENT_FILE);
}

/** Keeps a document just verified by a successful check (0600, atomic: a crash leaves the old or the new). */
export function storeDocument(file: string, signed: SignedLicence): void {
  const { document, signature, algorithm } = signed;
  writeKeyFileAtomically(file, Buffer.from(JSON.stringify({ document, signature, algorithm }), 'utf8'));
}

export interface GraceRules {
  publicKey: crypto.KeyObject;
  fingerprint: string;
  licenceKey: string;
  graceHours: number;
  now: Date;
}

export type GraceResult =
  | { ok: true; document: LicenceDocument; servesUntil: Date }
  | { ok: false; reason: string };

/** The stored document if it may stand in for a check now, and until when; else why not. */
export function graceDocument(file: string, rules: GraceRules): GraceResult {
  if (rules.graceHours <= 0) return { ok: false, reason: 'no offline grace ([licence] offline_grace_hours = 0)' };
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    return { ok: false, reason: missing ? 'no licence document is stored from an earlier check' : `the stored licence document cannot be read: ${(err as Error).message}` };
  }
  let document: LicenceDocument;
  try {
    document = verifyLicenceDocument(JSON.parse(text), rules.publicKey);
    checkDocumentFor(document, { fingerprint: rules.fingerprint, licenceKey: rules.licenceKey, now: rules.now });
  } catch (err) {
    if (!(err instanceof LicenceDocumentError) && !(err instanceof SyntaxError)) throw err;
    return { ok: false, reason: `the stored licence document is refused: ${err.message}` };
  }
  const issued = Date.parse(document.issued);
  const graceEnd = issued + rules.graceHours * 3_600_000;
  if (graceEnd <= rules.now.getTime()) {
    return { ok: false, reason: `the stored licence document was issued at ${document.issued}, more than offline_grace_hours (${rules.graceHours}) ago` };
  }
  return { ok: true, document, servesUntil: new Date(Math.min(graceEnd, Date.parse(document.validUntil))) };
}
