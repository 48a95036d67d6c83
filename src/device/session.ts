// Labelled liveness sessions: one presentation each (a live person, or one attack) recorded by
// `face-check record --label ...` into <folder>/<session-id>/, beside a session.json that says what was
// presented. The recording's format is stored in session.json so that an evaluator dispatches on it: a
// camera kind added later (an OpenNI2 .oni file, a RealSense .bag) adds a format, not a new layout.
import fs from 'node:fs';
import path from 'node:path';

export const SESSION_FILE = 'session.json';
export const SESSION_VERSION = 1;
/** The bona fide label; every other label is an attack kind (ISO/IEC 30107-3: a PAI species). */
export const BONA_FIDE = 'live';
/** The usual labels; an operator may use their own (it is then an attack kind of its own). */
export const KNOWN_LABELS = ['live', 'print', 'print-bent', 'screen', 'cutout', 'mask'] as const;

const LABEL = /^[a-z0-9][a-z0-9_.-]{0,31}$/;
const SUBJECT = /^[A-Za-z0-9_.-]{1,64}$/;
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$/;
const MAX_NOTE = 500;
const MAX_DISTANCE_CM = 1000;

export interface SessionInfo {
  /** session.json's version. */
  faceCheckSession: number;
  /** The session's folder name. */
  id: string;
  /** What was presented: `live` or an attack kind. */
  label: string;
  /** Who was presented (a bona fide subject, or whose face the artefact shows); "" when not given. */
  subject: string;
  /** Face-to-camera distance in centimetres; null when not given. */
  distanceCm: number | null;
  note: string;
  recording: {
    /** `face-check` (this build replays it); other formats are named so an evaluator can refuse them clearly. */
    format: string;
    /** Relative to the session folder. */
    path: string;
    frames: number;
  };
  /** The camera that recorded it ([camera] source and, for the synthetic camera, its scenario and seed). */
  camera: Record<string, string | number | boolean>;
  recordedAt: string;
}

/** A session's problem: names the session folder and what is wrong. */
export class SessionError extends Error {}

export function checkLabel(label: string): string {
  if (!LABEL.test(label)) throw new SessionError(`label "${label}": 1-32 characters of a-z 0-9 _ . - (e.g. ${KNOWN_LABELS.join(', ')})`);
  return label;
}

export function checkSubject(subject: string): string {
  if (!SUBJECT.test(subject)) throw new SessionError(`subject "${subject}": 1-64 characters of A-Z a-z 0-9 _ . -`);
  return subject;
}

export function checkSessionId(id: string): string {
  if (!SESSION_ID.test(id)) throw new SessionError(`session id "${id}": 1-96 characters of A-Z a-z 0-9 _ . -, not starting with . _ or -`);
  return id;
}

export function checkDistanceCm(value: number): number {
  if (!(Number.isFinite(value) && value > 0 && value <= MAX_DISTANCE_CM)) throw new SessionError(`distance ${value} cm: a number above 0 and at most ${MAX_DISTANCE_CM}`);
  return value;
}

export function checkNote(note: string): string {
  if (note.length > MAX_NOTE) throw new SessionError(`note: at most ${MAX_NOTE} characters`);
  return note;
}

/** A new session id: label, subject and the UTC time, sortable; a suffix keeps two in one second apart. */
export function newSessionId(label: string, subject: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const suffix = Math.floor(Math.random() * 0x10000).toString(16).padStart(4, '0');
  return [stamp, label, subject, suffix].filter(Boolean).join('_');
}

export function writeSessionInfo(dir: string, info: SessionInfo): void {
  const file = path.join(dir, SESSION_FILE);
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(info, null, 2)}\n`);
  fs.renameSync(tmp, file);
}

/** Reads and checks <dir>/session.json; the session id is the folder's name. */
export function readSessionInfo(dir: string): SessionInfo {
  const id = path.basename(dir);
  const file = path.join(dir, SESSION_FILE);
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new SessionError(`session ${id}: ${e.code === 'ENOENT' ? `no ${SESSION_FILE} (not a session folder)` : `${SESSION_FILE}: ${e.message}`}`);
  }
  const fail = (what: string): never => { throw new SessionError(`session ${id}: ${SESSION_FILE}: ${what}`); };
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) fail('not a JSON object');
  const o = raw as Record<string, unknown>;
  if (o.faceCheckSession !== SESSION_VERSION) fail(`faceCheckSession must be ${SESSION_VERSION} (found ${JSON.stringify(o.faceCheckSession)})`);
  if (typeof o.label !== 'string' || o.label === '') fail('no label (what was presented: live, print, screen, ...)');
  const label = o.label as string;
  try {
    checkLabel(label);
  } catch (err) {
    fail((err as Error).message);
  }
  const rec = o.recording as Record<string, unknown> | undefined;
  if (!rec || typeof rec !== 'object') fail('no recording');
  if (typeof rec!.format !== 'string' || rec!.format === '') fail('recording.format missing');
  if (typeof rec!.path !== 'string' || rec!.path === '') fail('recording.path missing');
  const relative = rec!.path as string;
  if (path.isAbsolute(relative) || relative.split(/[\\/]/).includes('..')) fail('recording.path must stay inside the session folder');
  const distance = o.distanceCm;
  if (distance !== undefined && distance !== null && (typeof distance !== 'number' || !(distance > 0))) fail('distanceCm must be a positive number or null');
  return {
    faceCheckSession: SESSION_VERSION,
    id,
    label,
    subject: typeof o.subject === 'string' ? o.subject : '',
    distanceCm: typeof distance === 'number' ? distance : null,
    note: typeof o.note === 'string' ? o.note : '',
    recording: { format: rec!.format as string, path: relative, frames: typeof rec!.frames === 'number' ? rec!.frames : 0 },
    camera: o.camera && typeof o.camera === 'object' ? o.camera as SessionInfo['camera'] : {},
    recordedAt: typeof o.recordedAt === 'string' ? o.recordedAt : '',
  };
}

/**
 * The sessions of a folder, sorted by id: every sub-folder (dot-folders aside) must be a session; plain files
 * (a report written beside them) are left alone.
 */
export function listSessions(folder: string): { dir: string; info: SessionInfo }[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(folder, { withFileTypes: true });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new SessionError(e.code === 'ENOENT' ? `${folder}: no such folder` : e.code === 'ENOTDIR' ? `${folder}: not a folder` : `${folder}: ${e.message}`);
  }
  const dirs = entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name).sort();
  if (!dirs.length) throw new SessionError(`${folder}: no sessions (record some with face-check record --out ${folder} --label <kind>)`);
  return dirs.map((name) => ({ dir: path.join(folder, name), info: readSessionInfo(path.join(folder, name)) }));
}
