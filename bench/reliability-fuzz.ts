// Sends N generated hostile requests (test/helpers/hostile-requests.ts: bad JSON, deep nesting, bad headers,
// paths and methods, damaged and bomb images of every format) over raw sockets to a running service and
// counts what came back. Used by `npm run bench:reliability` (bench/reliability.ts); the same generators
// drive test/http/http-fuzz.test.ts.
import fc from 'fast-check';
import { contractProblem, hostileRequest, makeImageCorpus, sendRaw } from '../test/helpers/hostile-requests';

export interface FuzzOptions {
  /** Requests to send (default 10,000). */
  count?: number;
  /** A valid key, so body and image requests get past authentication. */
  apiKey: string;
  /** fast-check seed: the same seed sends the same requests. */
  seed?: number;
  /** Requests in flight at once (default 8). */
  concurrency?: number;
  /** Per request: no answer within this is a hang (default 35 s, above the default request timeout). */
  hangMs?: number;
  /** The pixel bound the bombs are made for ([image] max_pixels of the service; default 50,000,000). */
  maxPixels?: number;
  /** Resident memory of the service in MB (e.g. from /proc/<pid>/status); default: this process. */
  rss?: () => number;
}

export interface FuzzResult {
  sent: number;
  /** Count per HTTP status, plus "closed" (connection closed without an answer) and "hang". */
  statusCounts: Record<string, number>;
  /** 5xx other than load shedding: faults. */
  fiveXX: number;
  /** 503 answers with Retry-After: the service refusing work it could not take on at that moment. */
  shed: number;
  hangs: number;
  /** Answers that break the error contract (no Request-Id, a 4xx body other than {code, message}). */
  contractViolations: number;
  /** The first few violations, for the report. */
  examples: string[];
  maxRssMb: number;
}

const ownRss = () => Math.round(process.memoryUsage().rss / 1048576);

export async function runFuzz(baseUrl: string, opts: FuzzOptions): Promise<FuzzResult> {
  const url = new URL(baseUrl);
  const host = url.hostname;
  const port = Number(url.port || 80);
  const count = opts.count ?? 10_000;
  const concurrency = opts.concurrency ?? 8;
  const hangMs = opts.hangMs ?? 35_000;
  const rss = opts.rss ?? ownRss;
  const corpus = await makeImageCorpus(opts.maxPixels ?? 50_000_000);
  const arbitrary = hostileRequest(opts.apiKey, corpus);
  const seed = opts.seed ?? 1;

  const result: FuzzResult = { sent: 0, statusCounts: {}, fiveXX: 0, shed: 0, hangs: 0, contractViolations: 0, examples: [], maxRssMb: rss() };
  const sampler = setInterval(() => { result.maxRssMb = Math.max(result.maxRssMb, rss()); }, 250);
  // Generated in batches (fc.sample keeps a batch in memory; some requests are megabytes), drawn by the
  // senders one at a time, so a request that waits out the server's timeout holds one sender, not a batch.
  const BATCH = 200;
  function* requests() {
    for (let start = 0; start < count; start += BATCH) {
      yield* fc.sample(arbitrary, { numRuns: Math.min(BATCH, count - start), seed: seed + start });
    }
  }
  const source = requests();
  try {
    await Promise.all(Array.from({ length: concurrency }, async () => {
      for (let next = source.next(); !next.done; next = source.next()) {
        const request = next.value;
        const outcome = await sendRaw(host, port, request, hangMs);
        result.sent++;
        const key = outcome.kind === 'response' ? String(outcome.response.status) : outcome.kind;
        result.statusCounts[key] = (result.statusCounts[key] ?? 0) + 1;
        if (outcome.kind === 'hang') result.hangs++;
        if (outcome.kind !== 'response') continue;
        // A 503 with Retry-After is load shedding (e.g. the pixel budget while bombs are decoded), an
        // answer the service chose; any other 5xx is a fault.
        if (outcome.response.status === 503 && outcome.response.headers['retry-after']) result.shed++;
        else if (outcome.response.status >= 500) result.fiveXX++;
        const problem = contractProblem(request, outcome.response);
        if (problem && outcome.response.status < 500) {
          result.contractViolations++;
          if (result.examples.length < 5) result.examples.push(`${request.kind}: ${problem}`);
        }
      }
    }));
  } finally {
    clearInterval(sampler);
    result.maxRssMb = Math.max(result.maxRssMb, rss());
  }
  return result;
}

/** The same as runFuzz, under the name the task description uses. */
export const reliabilityFuzz = runFuzz;
