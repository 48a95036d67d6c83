// The environment a benchmark starts the program's processes with when it times their start: this process's
// environment less the variables that node reads before the program's first line and that the shipped
// service unit (src/install/systemd-unit.ts: PATH, NODE_ENV, FACE_CHECK_CACHE) does not give the service.
// NODE_EXTRA_CA_CERTS, set by many shells and CI images, makes node load and parse every root certificate at
// its start: 35-45 ms of `node -e 0`'s ~110 ms on the PVM guest (docs/index-snapshot.md). NODE_V8_COVERAGE
// (set under a coverage run) makes it record coverage. BENCH_SHELL_ENV=1 keeps the environment as it is.

/** The variables dropped, for the benchmarks' reports. */
export const NODE_START_VARIABLES = ['NODE_EXTRA_CA_CERTS', 'NODE_V8_COVERAGE'] as const;

export function serviceProcessEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  if (env.BENCH_SHELL_ENV === '1') return { ...env };
  const kept = { ...env };
  for (const name of NODE_START_VARIABLES) delete kept[name];
  return kept;
}

/** The dropped variables this environment had (empty: a service and the benchmark start alike). */
export function droppedStartVariables(env: NodeJS.ProcessEnv = process.env): string[] {
  return env.BENCH_SHELL_ENV === '1' ? [] : NODE_START_VARIABLES.filter((name) => env[name] !== undefined);
}
