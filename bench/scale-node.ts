// One node of npm run bench:scale: the service's real start-up (src/server.ts: store, galleries, follower,
// HTTP) with the fake face engine of the tests, so the bench measures the storage and gallery side and
// not the engine. Usage: node dist/bench/scale-node.js <ini>; logs "Server listening at …" when it serves.
import { loadConfig } from '../src/config/load';
import { startService } from '../src/server';
import { FakeEngine } from '../test/helpers/fake-engine';

startService(loadConfig(process.argv[2]), { engine: new FakeEngine() }).then((service) => {
  const stop = () => { void service.close().then(() => process.exit(0)); };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}, (err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});
