// A child process running the real start-up (src/start/start-service.ts: store, galleries, HTTP) with the fake engine,
// for restart tests that need many distinct identities. Usage: node <ts loader> fake-service-main.ts <ini>
import { failureExitCode } from '../../src/cli/exit-code';
import { loadConfig } from '../../src/config/load';
import { beginEarlySnapshots } from '../../src/start/early-start';
import { startService } from '../../src/start/start-service';
import { FakeEngine } from './fake-engine';

// As `face-check serve` does first (bin/face-check.js, src/start/early-start.ts): the snapshots' imports begin.
const config = loadConfig(process.argv[2]);
beginEarlySnapshots(config);
startService(config, { engine: new FakeEngine() }).then((service) => {
  const stop = () => { void service.close().then(() => process.exit(0)); };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}, (err: Error) => {
  // The command line's exit code for the failure (69 for an unreachable database, ...), as `face-check serve`.
  process.exit(failureExitCode(err, { err: (line) => process.stderr.write(`${line}\n${err.stack ?? ''}\n`) }));
});
