// One error table (src/error-table.ts): every ApiError takes status, code and message from it, and every
// status native code returns (native/core/status.h, exported by the addon as nativeStatuses) names a row.
import fs from 'node:fs';
import t from 'tap';
import { ERROR_TABLE } from '../src/error-table';
import { ApiError, ERROR_NAMES, ErrorCatalog, type ErrorName } from '../src/errors';
import { parseStatusHeader, statusHeader } from './helpers/errors';

/** The native statuses without a row in the table ('Ok' is success, not an error). */
function withoutRow(statuses: readonly string[]): string[] {
  return statuses.filter((s) => s !== 'Ok' && !(ERROR_NAMES as readonly string[]).includes(s));
}

function loadedStatuses(): string[] | undefined {
  try {
    // Required here, not imported: the header's check runs before the addon is built.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require('../src/native') as typeof import('../src/native')).nativeStatuses();
  } catch {
    return undefined;
  }
}

t.test('every status in native/core/status.h has a row in the error table', async (t) => {
  const statuses = parseStatusHeader();
  t.ok(statuses.includes('CameraNotConnected') && statuses.includes('ServiceUnavailable'), `read ${statuses.join(', ')}`);
  t.equal(statuses[0], 'Ok');
  t.same(withoutRow(statuses), []);
});

t.test('a native status without a row is found', async (t) => {
  const text = fs.readFileSync(statusHeader, 'utf8').replace('X(Internal)', 'X(Internal) \\\n  X(LensCracked)');
  t.same(withoutRow(parseStatusHeader(text)), ['LensCracked']);
});

const loaded = loadedStatuses();
t.test('the addon exports the header\'s statuses, by name in enum order',
  { skip: loaded ? false : 'native addon not built: the addon/header check needs npm run build:native' },
  async (t) => {
    t.same(loaded, parseStatusHeader());
  });

t.test('the names are the table\'s keys, unique', async (t) => {
  t.same(ERROR_NAMES, Object.keys(ERROR_TABLE));
  t.equal(new Set(ERROR_NAMES).size, ERROR_NAMES.length);
});

// The spec's section 7 table: HTTP status, code and message of each row.
const spec: [ErrorName, number, string, string][] = [
  ['CameraNotConnected', 400, 'R_400', 'Camera is not connected'],
  ['LiveFaceNotFound', 400, 'R_404', 'Face not found, or did not pass the liveness check'],
  ['FaceExists', 400, 'F_012', 'Face exists'],
  ['WrongFaceSize', 400, 'F_011', 'Wrong face size when image check'],
  ['WrongFaceYaw', 400, 'F_010', 'Wrong face yaw'],
  ['WrongFacePitch', 400, 'F_009', 'Wrong face pitch'],
  ['WrongFaceRoll', 400, 'F_008', 'Wrong face roll'],
  ['BadSharpness', 400, 'F_007', 'Sharpness is bad'],
  ['BadBrightness', 400, 'F_006', 'Brightness is bad'],
  ['SunglassesExist', 400, 'F_005', 'Sunglasses exist'],
  ['MouthOpen', 400, 'F_004', 'Mouth is open'],
  ['EyesClosed', 400, 'F_003', 'Eyes are closed'],
  ['NoFace', 400, 'F_002', 'Most likely no face exists'],
  ['NotOneFace', 400, 'F_001', 'Should be one face'],
  ['ProfileExists', 400, 'CP_002', 'Customer profile already exists with id <person_id>'],
  ['RequestBody', 400, 'R_002', 'Request body exception'],
  ['FieldsValidation', 400, 'R_003', 'Fields validation exception'],
  ['QuotaExceeded', 400, 'CP_005', 'Number of available requests exceeded'],
  ['FaceNotInCollection', 404, 'NF_001', 'Face not found in collection'],
  ['NoPersonMatched', 410, 'RF_001', 'No person matched'],
  ['Unauthorized', 401, 'UNAUTHORIZED', 'Unauthorized'],
  ['Forbidden', 403, 'FORBIDDEN', 'Forbidden'],
  ['Internal', 500, 'INTERNAL', 'Internal Server Error'],
];

t.test('the table carries the spec section 7 rows', async (t) => {
  const catalog = new ErrorCatalog();
  for (const [name, http, code, message] of spec) {
    const row = catalog.row(name);
    t.same([row.http, row.code, row.message], [http, code, message], name);
  }
});

t.test('ApiError: body is {code, message}; placeholders are filled; detail stays out of the body', async (t) => {
  const catalog = new ErrorCatalog();
  const e = catalog.create('ProfileExists', 'secret detail', { person_id: 'p-1' });
  t.type(e, ApiError);
  t.equal(e.statusCode, 400);
  t.same(e.body(), { code: 'CP_002', message: 'Customer profile already exists with id p-1' });
  t.notMatch(JSON.stringify(e.body()), 'secret');
  t.same(catalog.create('PayloadTooLarge').body(), { code: 'R_002', message: 'Request body exception' });
  t.equal(catalog.create('PayloadTooLarge').statusCode, 413);
});
