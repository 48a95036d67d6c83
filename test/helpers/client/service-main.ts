// The real start-up (src/start/start-service.ts: store, HTTP, licence, camera) with the fake engine, as a child process for
// the client's tests. Two marker identities drive what a unit test cannot reach through a real process:
// FAILING_IDENTITY makes the analysis throw (500 INTERNAL), HELD_IDENTITY holds it until the file named by
// CLIENT_TEST_GATE exists (a slow request: timeouts, cancellation, and with max_engine_queue = 1 a 503).
// Usage: node <ts loader> service-main.ts <ini>
import fs from 'node:fs';
import { failureExitCode } from '../../../src/cli/exit-code';
import { loadConfig } from '../../../src/config/load';
import type { AnalyzeOptions, FaceAnalysis, RgbImage } from '../../../src/engine/types';
import { startService } from '../../../src/start/start-service';
import { FakeEngine } from '../fake-engine';
import { FAILING_IDENTITY, HELD_IDENTITY } from './identities';

class ScriptedEngine extends FakeEngine {
  override async analyze(image: RgbImage, options: AnalyzeOptions = {}): Promise<FaceAnalysis[]> {
    const d = image.data;
    const identity = d[0] === 0xfa && d[1] === 0xce ? (d[3] << 8) | d[4] : -1;
    if (identity === FAILING_IDENTITY) throw new Error('scripted engine failure');
    const gate = process.env.CLIENT_TEST_GATE;
    if (identity === HELD_IDENTITY && gate) {
      while (!fs.existsSync(gate)) await new Promise((r) => setTimeout(r, 20));
    }
    return super.analyze(image, options);
  }
}

const config = loadConfig(process.argv[2]);
startService(config, { engine: new ScriptedEngine() }).then((service) => {
  const stop = () => { void service.close().then(() => process.exit(0)); };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}, (err: Error) => {
  process.exit(failureExitCode(err, { err: (line) => process.stderr.write(`${line}\n${err.stack ?? ''}\n`) }));
});
