// Health probes and metric scrapes arrive every few seconds: they write nothing to the log at the default
// level, while an ordinary request still writes its lines.
import fs from 'node:fs';
import t from 'tap';
import { BOOTSTRAP_KEY, tempDir } from '../helpers/app';
import { startServiceProcess, writeIni } from '../helpers/service-process';

t.test('probes and scrapes are not logged at info; other requests are', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const service = await startServiceProcess(writeIni(dir), 'fake');
  t.teardown(() => service.stop());
  for (let i = 0; i < 5; i++) {
    for (const url of ['/health/live', '/health/ready', '/metrics']) {
      t.equal((await fetch(`${service.address}${url}`)).status, 200, url);
    }
  }
  const person = await fetch(`${service.address}/person/face/nobody`, { headers: { 'api-key': BOOTSTRAP_KEY } });
  t.equal(person.status, 404);
  await new Promise((r) => setTimeout(r, 300));
  const lines = service.output().split('\n').filter((l) => l.startsWith('{'));
  t.same(lines.filter((l) => /\/health\/|\/metrics/.test(l)), [], 'no line about a probe or a scrape');
  t.ok(lines.some((l) => l.includes('/person/face/nobody')), 'an ordinary request is logged');
});
