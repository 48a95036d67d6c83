#!/usr/bin/env node
'use strict';
// The face-check command (see src/cli.ts); runs the compiled program (npm run build:ts).
const { main } = require('../dist/src/cli.js');

main(process.argv.slice(2)).then((code) => {
  if (code !== 0) process.exit(code);
});
