// The body shape scan gives the same answer however the body is cut into chunks (strings with escapes,
// quotes and brackets inside them, a backslash at a chunk's end), and its depth and value counts are JSON's.
import fc from 'fast-check';
import t from 'tap';
import { JsonShapeScanner, jsonShapeProblem, MAX_JSON_DEPTH, MAX_JSON_VALUES } from '../../src/http/json-shape';

function scanInChunks(bytes: Buffer, cuts: number[]): string | undefined {
  const scanner = new JsonShapeScanner();
  let from = 0;
  let answer: string | undefined;
  for (const cut of [...cuts.filter((c) => c > 0 && c < bytes.length)].sort((a, b) => a - b).concat(bytes.length)) {
    answer = scanner.push(bytes.subarray(from, cut)) ?? answer;
    from = cut;
  }
  return answer;
}

/** Nesting depth and value count as JSON defines them (what the scan must measure). */
function shapeOf(value: unknown): { depth: number; commas: number } {
  if (value === null || typeof value !== 'object') return { depth: 0, commas: 0 };
  const children = Array.isArray(value) ? value : Object.values(value);
  let depth = 0;
  let commas = Math.max(0, children.length - 1);
  for (const c of children) {
    const s = shapeOf(c);
    depth = Math.max(depth, s.depth);
    commas += s.commas;
  }
  return { depth: depth + 1, commas };
}

t.test('any JSON, any chunking: the same answer as the whole text, and the bounds JSON itself has', async (t) => {
  fc.assert(fc.property(fc.jsonValue({ maxDepth: 12 }), fc.array(fc.nat(4000), { maxLength: 12 }), (value, cuts) => {
    const text = JSON.stringify(value);
    const whole = jsonShapeProblem(text);
    const chunked = scanInChunks(Buffer.from(text, 'utf8'), cuts);
    const { depth, commas } = shapeOf(value);
    const expected = depth > MAX_JSON_DEPTH || commas > MAX_JSON_VALUES;
    return (whole === undefined) === !expected && chunked === whole;
  }), { numRuns: 2000 });
  t.pass('2000 generated bodies');
});

t.test('escapes and brackets inside strings, cut at every byte', async (t) => {
  const text = JSON.stringify({ faceImage: 'a\\"[[[[[[[[[[{{{{{{{{\\\\', b: '\u00e9\u4e2d"]]]', c: [[1]] });
  const bytes = Buffer.from(text, 'utf8');
  for (let cut = 0; cut <= bytes.length; cut++) {
    for (const second of [cut + 1, cut + 2]) {
      const answer = scanInChunks(bytes, [cut, second]);
      if (answer !== undefined) t.fail(`cut at ${cut}/${second}: ${answer}`);
    }
  }
  t.equal(jsonShapeProblem('['.repeat(9)), `JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
  t.equal(jsonShapeProblem(`[${'0,'.repeat(MAX_JSON_VALUES + 1)}0]`), `JSON with more than ${MAX_JSON_VALUES} values`);
  const scanner = new JsonShapeScanner();
  t.ok(scanner.push(Buffer.from('{"a":'.repeat(9))), 'refused within the first bytes of a deep body');
  t.ok(scanner.push(Buffer.from('anything')), 'and stays refused');
});
