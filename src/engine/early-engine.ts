// The engine of `face-check serve` starts loading its models before the rest of the program is loaded
// (src/ops/early-start.ts): the models load on the addon's threads (~0.45 s on the development VM, longer on
// a board) while the main thread loads the program's modules (~0.3 s), so a start takes the longer of the
// two instead of their sum. The start proper (src/server.ts, src/cloud-node.ts) takes that engine once; a
// process that never starts one (another command, a test) gets a new one each time it asks.
import { createEngine } from './index';
import type { FaceEngine } from './types';

let early: Promise<FaceEngine> | undefined;

/** Starts loading the default engine now (once per process). A failure is reported to the start that takes it. */
export function loadEngineEarly(): void {
  if (early) return;
  early = createEngine();
  early.catch(() => undefined);  // taken and awaited by the start, which reports it
}

/** Whether an engine started by loadEngineEarly waits to be taken. */
export function engineLoadingEarly(): boolean {
  return early !== undefined;
}

/** The engine loading since loadEngineEarly (handed out once), else a new createEngine(). */
export function engineForStart(): Promise<FaceEngine> {
  const engine = early ?? createEngine();
  early = undefined;
  return engine;
}
