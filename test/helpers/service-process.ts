// The service as a real process: an ini file in a temporary folder, `face-check serve` (or the same
// start-up with the fake engine) as a child, its address read from the "listening" log line, and a hard
// kill. Restart tests go through these, so nothing survives in memory between two runs.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BOOTSTRAP_KEY } from './app';
import { spawnListening } from './spawn-listening';

const repoRoot = path.resolve(__dirname, '..', '..');

export interface ServiceProcess {
  child: ChildProcess;
  address: string;
  /** Everything the process wrote so far (stdout and stderr). */
  output(): string;
  /** SIGKILL: no handler runs, nothing is flushed. */
  kill9(): Promise<void>;
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
}

/** A cloud-mode ini (no camera) on a loopback port chosen by the system. */
export function writeIni(dir: string, extra = ''): string {
  const file = path.join(dir, 'face-check.ini');
  fs.writeFileSync(file, [
    '[server]', 'mode = cloud', 'host = 127.0.0.1', 'port = 0',
    '[storage]', 'path = ./store',
    '[auth]', `bootstrap_key = ${BOOTSTRAP_KEY}`,
    '[camera]', 'source = none',
    extra,
  ].join('\n'));
  return file;
}

/**
 * A cloud node over PostgreSQL: `<dir>/<file>`, its storage path `./<name>`, logging at info (tests read the
 * start's lines); `storage` lines go under [storage], `extra` after every section.
 */
export function writePostgresNodeIni(dir: string, file: string, node: { name: string; url: string; keyFile: string; storage?: string[]; extra?: string[] }): string {
  const ini = path.join(dir, file);
  fs.writeFileSync(ini, [
    '[server]', 'mode = cloud', 'host = 127.0.0.1', 'port = 0',
    '[storage]', `path = ./${node.name}`, 'backend = postgres', `postgres_url = ${node.url}`, `key_file = ${node.keyFile}`, ...node.storage ?? [],
    '[auth]', `bootstrap_key = ${BOOTSTRAP_KEY}`,
    '[log]', 'level = info',
    '[camera]', 'source = none',
    ...node.extra ?? [],
  ].join('\n'));
  return ini;
}

/**
 * Starts `face-check serve --config ini` (engine 'real': the installed program, compiled to dist/) or the
 * same start-up with the fake engine in a child that runs this repository's TypeScript (engine 'fake').
 */
export async function startServiceProcess(ini: string, engine: 'real' | 'fake', timeoutMs = 60_000): Promise<ServiceProcess> {
  const args = engine === 'real'
    ? [path.join(repoRoot, 'bin', 'face-check.js'), 'serve', '--config', ini]
    // The TypeScript loader flags tap gave this process let the child run .ts files too.
    : [...process.execArgv, path.join(__dirname, 'fake-service-main.ts'), ini];
  const { child, address, output, exited } = await spawnListening(process.execPath, args, { cwd: repoRoot, timeoutMs });
  return {
    child, address, output,
    kill9: async () => {
      child.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/** A JSON request with the bootstrap key; resolves with the status and parsed body (network errors reject). */
export async function request(base: string, method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { 'api-key': BOOTSTRAP_KEY, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** An identify's answer in one string: the person named (200), else the status and the error code. */
export async function identifyAnswer(node: ServiceProcess, body: { faceImage: string }): Promise<string> {
  const res = await request(node.address, 'POST', '/person/recognize-face', body);
  return res.status === 200 ? res.body.personId : `${res.status} ${res.body?.code ?? ''}`;
}

/** Polls `ok` every 5 ms for up to `ms`: whether it came true. */
export async function until(ms: number, ok: () => Promise<boolean>): Promise<boolean> {
  const end = performance.now() + ms;
  do {
    if (await ok()) return true;
    await new Promise((r) => setTimeout(r, 5));
  } while (performance.now() < end);
  return false;
}
