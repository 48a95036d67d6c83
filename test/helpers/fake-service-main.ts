// A child process running the real start-up (src/server.ts: store, galleries, HTTP) with the fake engine,
// for restart tests that need many distinct identities. Usage: node <ts loader> fake-service-main.ts <ini>
import { loadConfig } from '../../src/config/load';
import { startService } from '../../src/server';
import { FakeEngine } from './fake-engine';

startService(loadConfig(process.argv[2]), { engine: new FakeEngine() }).then((service) => {
  const stop = () => { void service.close().then(() => process.exit(0)); };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}, (err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});
