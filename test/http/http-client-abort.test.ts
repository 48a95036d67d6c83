// A client that closes its connection half-way through sending a body is its own doing: the service logs it
// as a refused request (info, no stack), never at error level, so nobody can fill the error log by aborting
// uploads; and it goes on serving.
import fs from 'node:fs';
import net from 'node:net';
import t from 'tap';
import { BOOTSTRAP_KEY, tempDir } from '../helpers/app';
import { startServiceProcess, writeIni } from '../helpers/service-process';

t.test('aborted uploads are logged at info without a stack', async (t) => {
  const dir = tempDir();
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const service = await startServiceProcess(writeIni(dir), 'fake');
  t.teardown(() => service.stop());
  const { hostname, port } = new URL(service.address);
  for (let i = 0; i < 5; i++) {
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => {
        socket.write(`POST /person/recognize-face HTTP/1.1\r\nHost: x\r\nApi-Key: ${BOOTSTRAP_KEY}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"faceImage":"AAAA');
        setTimeout(() => { socket.destroy(); resolve(); }, 150);
      });
      socket.on('error', reject);
    });
  }
  await new Promise((r) => setTimeout(r, 500));
  const health = await fetch(`${service.address}/person/face/nobody`, { headers: { 'api-key': BOOTSTRAP_KEY } });
  t.equal(health.status, 404, 'still serving');
  const lines = service.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string; detail?: string; err?: unknown });
  t.same(lines.filter((l) => l.level >= 50), [], 'nothing at error level');
  const refused = lines.filter((l) => l.msg === 'request refused' && /closed the connection/.test(l.detail ?? ''));
  t.equal(refused.length, 5, 'each abort is one refusal line at info');
  t.ok(refused.every((l) => l.level === 30 && l.err === undefined), 'at info, without a stack');
});
