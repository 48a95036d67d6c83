// One error table: the addon's errorTable is the rows of native/core/error_table.h, and every
// ApiError takes status, code and message from it.
import t from 'tap';
import { ApiError, ERROR_NAMES, ErrorCatalog } from '../src/errors';
import { nativeTable, parseErrorHeader } from './helpers/errors';

const header = parseErrorHeader();

t.test('the header parses into rows with unique names', async (t) => {
  t.ok(header.length >= ERROR_NAMES.length);
  t.equal(new Set(header.map((r) => r.name)).size, header.length);
});

const native = nativeTable();
t.test('the addon exports exactly the header rows',
  { skip: native ? false : 'native addon not built: the addon/header consistency check needs npm run build:native' },
  async (t) => {
    t.same(native, header);
  });

t.test('every name the service uses exists in the table', async (t) => {
  t.doesNotThrow(() => new ErrorCatalog(header));
  t.throws(() => new ErrorCatalog(header.filter((r) => r.name !== 'NoFace')), /NoFace/);
});

// The spec's section 7 table: HTTP status, code and message of each row.
const spec: [string, number, string, string][] = [
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
  const catalog = new ErrorCatalog(native ?? header);
  for (const [name, http, code, message] of spec) {
    const row = catalog.row(name as (typeof ERROR_NAMES)[number]);
    t.same([row.http, row.code, row.message], [http, code, message], name);
  }
});

t.test('ApiError: body is {code, message}; placeholders are filled; detail stays out of the body', async (t) => {
  const catalog = new ErrorCatalog(header);
  const e = catalog.create('ProfileExists', 'secret detail', { person_id: 'p-1' });
  t.type(e, ApiError);
  t.equal(e.statusCode, 400);
  t.same(e.body(), { code: 'CP_002', message: 'Customer profile already exists with id p-1' });
  t.notMatch(JSON.stringify(e.body()), 'secret');
  t.same(catalog.create('PayloadTooLarge').body(), { code: 'R_002', message: 'Request body exception' });
  t.equal(catalog.create('PayloadTooLarge').statusCode, 413);
});
