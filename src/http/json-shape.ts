// A linear pre-scan of a JSON body before JSON.parse. Every request body of this API is a flat object of a
// few fields, yet JSON.parse of a 24 MB body of nested brackets or of millions of tiny values holds the
// event loop for seconds and allocates gigabytes. The scan refuses such bodies (the caller answers R_002)
// in one pass that jumps over string contents with indexOf, so a body of big base64 strings costs little.
// It does not validate JSON: whatever it lets through, JSON.parse still judges.

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

/** Why the body is refused before parsing, or undefined when its shape is within the bounds. */
export function jsonShapeProblem(text: string, maxDepth = MAX_JSON_DEPTH, maxValues = MAX_JSON_VALUES): string | undefined {
  let depth = 0;
  let values = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Jump to the closing quote: one preceded by an even number of backslashes.
      let j = i;
      for (;;) {
        j = text.indexOf('"', j + 1);
        if (j < 0) return undefined; // unterminated string: JSON.parse reports it
        let k = j - 1;
        while (text.charCodeAt(k) === BACKSLASH) k--;
        if ((j - 1 - k) % 2 === 0) break;
      }
      i = j;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > maxDepth) return `JSON nested deeper than ${maxDepth} levels`;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    } else if (c === COMMA) {
      if (++values > maxValues) return `JSON with more than ${maxValues} values`;
    }
  }
  return undefined;
}
