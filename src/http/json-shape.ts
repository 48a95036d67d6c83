// A pre-scan of a JSON body's shape, fed chunk by chunk as the body arrives. Every request body of this API
// is a flat object of a few fields, yet JSON.parse of a 24 MB body of nested brackets or of millions of tiny
// values holds the event loop for seconds and allocates gigabytes. The scan finds such a body within its
// first bytes (the 9th nesting level, the 1001st value), so the rest of it is neither kept, decoded nor
// parsed; string contents are jumped over with indexOf, so big base64 strings cost little. It does not
// validate JSON: whatever it lets through, JSON.parse still judges.

/** Deepest nesting of objects/arrays accepted (a body is depth 1; a wrongly typed field adds one or two). */
export const MAX_JSON_DEPTH = 8;
/** Most values (object members and array elements) in one body. */
export const MAX_JSON_VALUES = 1000;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;

export class JsonShapeScanner {
  private depth = 0;
  private values = 0;
  private inString = false;
  /** The previous chunk ended on a backslash inside a string: the next byte is escaped. */
  private escapeNext = false;
  private problem: string | undefined;

  constructor(private readonly maxDepth = MAX_JSON_DEPTH, private readonly maxValues = MAX_JSON_VALUES) {}

  /** Scans the next bytes; answers why the body is refused, once it is (and from then on). */
  push(chunk: Uint8Array): string | undefined {
    if (this.problem) return this.problem;
    const n = chunk.length;
    let i = 0;
    if (this.escapeNext) {
      this.escapeNext = false;
      i = 1;
    }
    while (i < n) {
      if (this.inString) {
        const quote = chunk.indexOf(QUOTE, i);
        const end = quote < 0 ? n : quote;
        const escape = chunk.subarray(i, end).indexOf(BACKSLASH);
        if (escape >= 0) {
          // Skip the backslash and the character it escapes (which may be in the next chunk).
          i += escape + 2;
          if (i > n) this.escapeNext = true;
          continue;
        }
        if (quote < 0) return undefined;
        this.inString = false;
        i = quote + 1;
        continue;
      }
      const c = chunk[i++];
      if (c === QUOTE) this.inString = true;
      else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        if (++this.depth > this.maxDepth) return (this.problem = `JSON nested deeper than ${this.maxDepth} levels`);
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) this.depth--;
      else if (c === COMMA && ++this.values > this.maxValues) {
        return (this.problem = `JSON with more than ${this.maxValues} values`);
      }
    }
    return undefined;
  }
}

/** Why a whole body is refused before parsing, or undefined when its shape is within the bounds. */
export function jsonShapeProblem(text: string, maxDepth = MAX_JSON_DEPTH, maxValues = MAX_JSON_VALUES): string | undefined {
  return new JsonShapeScanner(maxDepth, maxValues).push(Buffer.from(text, 'utf8'));
}
