// The ini reference is complete: every key the program accepts is documented with its section, so a new
// key cannot ship undocumented. [camera] and [liveness] live in docs/device.md (beside the checks they
// set), the rest in tables of docs/configuration.md.
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { configSchema } from '../../src/config/schema';

const root = path.resolve(__dirname, '..', '..');
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');

/** The key names in the tables under each `## [section]` heading of a markdown file. */
function documentedKeys(markdown: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  let section: string | undefined;
  for (const line of markdown.split('\n')) {
    const heading = /^#+ \[([a-z]+)\]/.exec(line);
    if (heading) {
      section = heading[1];
      if (!out.has(section)) out.set(section, new Set());
      continue;
    }
    const row = /^\| `([a-z_]+)` \|/.exec(line);
    if (row && section) out.get(section)!.add(row[1]);
  }
  return out;
}

/** Sections documented in docs/device.md, whose tables group keys and sit beside the checks they set. */
const DEVICE_SECTIONS = new Set(['camera', 'liveness']);

t.test('every ini key is in the reference, under its section', async (t) => {
  const docs = documentedKeys(read('docs/configuration.md'));
  const device = read('docs/device.md');
  const missing: string[] = [];
  for (const [section, keys] of Object.entries(configSchema)) {
    for (const key of Object.keys(keys)) {
      const found = DEVICE_SECTIONS.has(section) ? device.includes(`\`${key}\``) : docs.get(section)?.has(key);
      if (!found) missing.push(`[${section}] ${key}`);
    }
  }
  t.same(missing, [], 'undocumented keys');
});

t.test('the reference names no key the program does not accept', async (t) => {
  const extra: string[] = [];
  for (const [section, keys] of documentedKeys(read('docs/configuration.md'))) {
    const known = (configSchema as unknown as Record<string, Record<string, unknown> | undefined>)[section];
    for (const key of keys) if (!known || !(key in known)) extra.push(`[${section}] ${key}`);
  }
  t.same(extra, [], 'documented keys the program would refuse');
});

t.test('every camera source\'s section is documented in docs/device.md, option for option, from the registry', async (t) => {
  const { cameraCatalog } = await import('../../src/device/camera-catalog');
  const tables = new Map<string, Set<string>>();
  let section: string | undefined;
  let rows = 0;
  for (const line of read('docs/device.md').split('\n')) {
    const heading = /^#+ /.exec(line) ? /^#+ \[camera\.([a-z0-9_]+)\]$/.exec(line) : null;
    if (/^#+ /.test(line)) section = heading?.[1];
    if (heading) tables.set(heading[1], new Set());
    // A section's table ends at its first line that is not a table row.
    if (!line.startsWith('|') && rows > 0) section = undefined;
    rows = line.startsWith('|') && section ? rows + 1 : 0;
    const row = /^\| `([a-z_]+)`(?:, `([a-z_]+)`)? \|/.exec(line);
    if (row && section) for (const key of row.slice(1).filter(Boolean)) tables.get(section)!.add(key);
  }
  for (const source of cameraCatalog()) {
    const documented = tables.get(source.name);
    t.ok(documented, `### [camera.${source.name}] is in docs/device.md`);
    const settable = source.options.filter((o) => o.settable).map((o) => o.key).sort();
    t.same([...(documented ?? [])].sort(), settable, `[camera.${source.name}]: the documented keys are the ones it takes`);
  }
});
