// Templates are stored in segments of up to SEGMENT_CAPACITY persons of one account and one model, not one
// record per person: the gallery rebuild at start then reads 1/32 as many LMDB values and does no per-person
// work in JavaScript (1M templates: ~31k values, copied block-wise into the native index), and 2 KB
// templates no longer take a 4 KB overflow page each. An enrolment rewrites one segment (<= 68 KB).
//
// Segment value (little-endian):
//   u16 format (1) | u16 reserved | u32 dimension | u32 count | u32 reserved        16-byte header
//   count x dimension float32                                                       the templates
//   count person ids, UTF-8, each followed by '\n'                                   (ids never hold '\n')
// Entries are dense: removing one moves the last entry into its place.

export const SEGMENT_CAPACITY = 32;
const FORMAT = 1;
const HEADER = 16;

export interface Segment {
  dimension: number;
  ids: string[];
  /** count x dimension values; entry i at [i * dimension, (i + 1) * dimension). */
  templates: Float32Array;
}

export class SegmentFormatError extends Error {
  override name = 'SegmentFormatError';
}

/** Header fields and where the parts lie, without copying anything. */
export function segmentLayout(bytes: Uint8Array): { dimension: number; count: number; templatesAt: number; idsAt: number } {
  if (bytes.byteLength < HEADER) throw new SegmentFormatError(`template segment of ${bytes.byteLength} bytes`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const format = view.getUint16(0, true);
  if (format !== FORMAT) throw new SegmentFormatError(`template segment format ${format}, this program reads ${FORMAT}`);
  const dimension = view.getUint32(4, true);
  const count = view.getUint32(8, true);
  const idsAt = HEADER + count * dimension * 4;
  if (dimension < 1 || count > SEGMENT_CAPACITY || idsAt > bytes.byteLength) {
    throw new SegmentFormatError(`template segment header (dimension ${dimension}, count ${count}) does not fit ${bytes.byteLength} bytes`);
  }
  return { dimension, count, templatesAt: HEADER, idsAt };
}

/** The ids of a segment, in entry order. */
export function segmentIds(bytes: Uint8Array, layout = segmentLayout(bytes)): string[] {
  if (layout.count === 0) return [];
  const text = Buffer.from(bytes.buffer, bytes.byteOffset + layout.idsAt, bytes.byteLength - layout.idsAt).toString('utf8');
  const ids = text.split('\n');
  ids.pop();  // after the last '\n'
  if (ids.length !== layout.count) throw new SegmentFormatError(`template segment lists ${ids.length} ids for ${layout.count} templates`);
  return ids;
}

export function decodeSegment(bytes: Uint8Array): Segment {
  const layout = segmentLayout(bytes);
  // Copied: LMDB values may sit at any byte offset, a Float32Array needs 4-byte alignment.
  const raw = new Uint8Array(layout.count * layout.dimension * 4);
  raw.set(bytes.subarray(layout.templatesAt, layout.idsAt));
  return { dimension: layout.dimension, ids: segmentIds(bytes, layout), templates: new Float32Array(raw.buffer) };
}

export function encodeSegment(segment: Segment): Buffer {
  const count = segment.ids.length;
  if (count > SEGMENT_CAPACITY) throw new RangeError(`a template segment holds at most ${SEGMENT_CAPACITY} persons`);
  if (segment.templates.length !== count * segment.dimension) {
    throw new RangeError(`template segment: ${segment.templates.length} values for ${count} x ${segment.dimension}`);
  }
  const ids = Buffer.from(segment.ids.map((id) => `${id}\n`).join(''), 'utf8');
  const out = Buffer.alloc(HEADER + segment.templates.byteLength + ids.length);
  out.writeUInt16LE(FORMAT, 0);
  out.writeUInt32LE(segment.dimension, 4);
  out.writeUInt32LE(count, 8);
  out.set(new Uint8Array(segment.templates.buffer, segment.templates.byteOffset, segment.templates.byteLength), HEADER);
  out.set(ids, HEADER + segment.templates.byteLength);
  return out;
}

export function emptySegment(dimension: number): Segment {
  return { dimension, ids: [], templates: new Float32Array(0) };
}

/** The template of `personId` straight from a stored value (a copy of that one row), or undefined. */
export function templateIn(bytes: Uint8Array, personId: string): Float32Array | undefined {
  const layout = segmentLayout(bytes);
  const i = segmentIds(bytes, layout).indexOf(personId);
  if (i < 0) return undefined;
  const rowBytes = layout.dimension * 4;
  const row = new Uint8Array(rowBytes);
  row.set(bytes.subarray(layout.templatesAt + i * rowBytes, layout.templatesAt + (i + 1) * rowBytes));
  return new Float32Array(row.buffer);
}

/** The template of `personId` (a copy), or undefined. */
export function templateOf(segment: Segment, personId: string): Float32Array | undefined {
  const i = segment.ids.indexOf(personId);
  return i < 0 ? undefined : segment.templates.slice(i * segment.dimension, (i + 1) * segment.dimension);
}

/** Adds or overwrites the entry of `personId`. */
export function withTemplate(segment: Segment, personId: string, template: Float32Array): Segment {
  if (template.length !== segment.dimension) {
    throw new RangeError(`template of ${template.length} values in a segment of dimension ${segment.dimension}`);
  }
  const i = segment.ids.indexOf(personId);
  if (i >= 0) {
    const templates = Float32Array.from(segment.templates);
    templates.set(template, i * segment.dimension);
    return { dimension: segment.dimension, ids: segment.ids, templates };
  }
  if (segment.ids.length >= SEGMENT_CAPACITY) throw new RangeError(`a template segment holds at most ${SEGMENT_CAPACITY} persons`);
  const templates = new Float32Array(segment.templates.length + segment.dimension);
  templates.set(segment.templates);
  templates.set(template, segment.templates.length);
  return { dimension: segment.dimension, ids: [...segment.ids, personId], templates };
}

/** Removes the entry of `personId` (the last entry takes its place); unchanged when absent. */
export function withoutTemplate(segment: Segment, personId: string): Segment {
  const i = segment.ids.indexOf(personId);
  if (i < 0) return segment;
  const d = segment.dimension;
  const last = segment.ids.length - 1;
  const ids = segment.ids.slice(0, last);
  const templates = segment.templates.slice(0, last * d);
  if (i !== last) {
    ids[i] = segment.ids[last];
    templates.set(segment.templates.subarray(last * d, (last + 1) * d), i * d);
  }
  return { dimension: d, ids, templates };
}

/** Appends entries of persons not in the segment, as many as fit; returns the segment and how many were taken. */
export function withAppended(segment: Segment, entries: ReadonlyArray<{ personId: string; template: Float32Array }>,
  from = 0): { segment: Segment; taken: number } {
  const d = segment.dimension;
  let taken = 0;
  while (from + taken < entries.length && segment.ids.length + taken < SEGMENT_CAPACITY &&
    entries[from + taken].template.length === d) taken++;
  if (taken === 0) return { segment, taken };
  const templates = new Float32Array(segment.templates.length + taken * d);
  templates.set(segment.templates);
  const ids = segment.ids.slice();
  for (let k = 0; k < taken; k++) {
    templates.set(entries[from + k].template, segment.templates.length + k * d);
    ids.push(entries[from + k].personId);
  }
  return { segment: { dimension: d, ids, templates }, taken };
}
