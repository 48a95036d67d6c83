// A program started as a child process that is ready once it logs fastify's "Server listening at" line:
// its output is kept (stdout and stderr together) and its exit is awaitable. A child that exits first, or
// stays silent past the time limit (then it is killed), rejects with everything it wrote.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

export interface ListeningProcess {
  child: ChildProcess;
  /** e.g. http://127.0.0.1:40123 */
  address: string;
  port: number;
  /** Everything written so far. */
  output(): string;
  /** The exit code (null after a signal). */
  exited: Promise<number | null>;
}

export async function spawnListening(command: string, args: string[],
  options: Pick<SpawnOptions, 'cwd' | 'env'> & { timeoutMs?: number } = {}): Promise<ListeningProcess> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout!.on('data', (c: Buffer) => { text += c.toString('utf8'); });
  child.stderr!.on('data', (c: Buffer) => { text += c.toString('utf8'); });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const address = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`not listening after ${timeoutMs} ms:\n${text}`)); }, timeoutMs);
    const look = () => {
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(text);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    };
    child.stdout!.on('data', look);
    child.stderr!.on('data', look);
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`exited with ${code} before listening:\n${text}`)); });
  });
  return { child, address, port: Number(new URL(address).port), output: () => text, exited };
}
