#!/usr/bin/env node
'use strict';
// The face-check command (see src/cli/main.ts); runs the compiled program (npm run build:ts). `serve` first has
// the kernel read the galleries' snapshot files (src/cli/early-serve.ts, src/start/early-start.ts) while the rest of the program loads.
require('../dist/src/cli/early-serve.js').beginEarlyServe(process.argv.slice(2));
const { main } = require('../dist/src/cli/main.js');

main(process.argv.slice(2)).then((code) => {
  if (code !== 0) process.exit(code);
});
