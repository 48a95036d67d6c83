// Generated hostile requests over real HTTP (a listening server on 127.0.0.1, raw sockets, the fake engine):
// bad JSON, deep nesting, wrong types, huge strings, bad base64; bad and conflicting headers; long, escaped
// and control-character paths; odd methods and versions; truncated, bit-flipped, lying and bomb images of
// every accepted format. Whatever comes in: no 5xx, no hang, every answer carries Request-Id, every 4xx
// is exactly {code, message}, and the server still answers afterwards.
import fc from 'fast-check';
import t from 'tap';
import { startTestApp, BOOTSTRAP_KEY } from '../helpers/app';
import { contractProblem, hostileRequest, makeImageCorpus, sendRaw, type HostileRequest } from '../helpers/hostile-requests';

const RUNS = 400;
const MAX_PIXELS = 4_000_000;
/** Per request: far above the server's own timeouts below, so only a real hang reaches it. */
const HANG_MS = 10_000;

t.test('hostile requests: no 5xx, no hang, the error contract holds, the server survives', async (t) => {
  const a = await startTestApp({
    tune: (c) => {
      c.image.max_pixels = MAX_PIXELS;
      c.server.request_timeout_ms = 1500;
      c.server.headers_timeout_ms = 1000;
    },
  });
  t.teardown(() => a.close());
  const address = await a.app.listen({ host: '127.0.0.1', port: 0 });
  const port = Number(new URL(address).port);
  const corpus = await makeImageCorpus(MAX_PIXELS);

  const kinds = new Map<string, number>();
  const statuses = new Map<string, number>();
  const problems: string[] = [];
  const check = async (request: HostileRequest) => {
    const family = request.kind.split(':').slice(0, 2).join(':');
    kinds.set(family, (kinds.get(family) ?? 0) + 1);
    const outcome = await sendRaw('127.0.0.1', port, request, HANG_MS);
    const key = outcome.kind === 'response' ? String(outcome.response.status) : outcome.kind;
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
    let problem: string | undefined;
    if (outcome.kind === 'hang') problem = 'no answer within the bound';
    else if (outcome.kind === 'response') problem = contractProblem(request, outcome.response);
    if (problem) {
      const head = request.bytes.subarray(0, 160).toString('latin1');
      problems.push(`${request.kind}: ${problem}\n    ${JSON.stringify(head)}`);
    }
    return problem === undefined;
  };

  await fc.assert(fc.asyncProperty(hostileRequest(BOOTSTRAP_KEY, corpus), check), { numRuns: RUNS, seed: 20241124, endOnFailure: true });
  t.same(problems, [], 'every request kept the contract');
  t.comment(`kinds: ${JSON.stringify(Object.fromEntries([...kinds].sort()))}`);
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
  t.ok([...statuses.keys()].some((s) => s.startsWith('4')), 'the generators do reach the error paths');

  // Still serving: an ordinary request is answered as before.
  const res = await fetch(`${address}/person/face/nobody`, { headers: { 'api-key': BOOTSTRAP_KEY } });
  t.equal(res.status, 404);
  t.same(await res.json(), { code: 'NF_001', message: 'Face not found in collection' });
});
